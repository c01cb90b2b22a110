import Foundation
import GRDB

extension SyncClient {
    /// Proves the replica exact (protocol §11): a sync and `GET /verify` in one group (one snapshot, one date), then
    /// each list's count and digest compared with the replica's; a list that differs is downloaded again whole
    /// (unsent edits kept on top) and reported.
    @discardableResult
    public func verify() async throws -> VerifyReport {
        try await flight.run {
            let (threadsLast, wallLast) = try await self.replica.pool.read { db in
                (try Replica.lastServerID(db, .threads), try Replica.lastServerID(db, .wall))
            }
            var query: [String] = []
            if let threadsLast { query.append("threadsLastId=\(Self.queryEscape(threadsLast))") }
            if let wallLast { query.append("wallLastId=\(Self.queryEscape(wallLast))") }
            let verify = SubRequest(id: "v", method: "GET", url: "/api/v1/verify" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
            var report = try await self.runSync(fresh: [], extra: [verify])
            guard let lists = report.extras["v"]?["lists"]?.objectValue else {
                throw SyncClientError.server(status: 0, code: "no_verify", detail: "the group carried no verify answer")
            }
            var verified = VerifyReport(date: report.date)
            let local = try await self.replica.pool.read { db in try Self.localDigests(db, lists: Array(lists.keys)) }
            for (name, expected) in lists.sorted(by: { $0.key < $1.key }) {
                verified.checked.append(name)
                let count: Int? = if case .number(let n)? = expected["count"] { Int(n) } else { nil }
                if local[name]?.count != count || local[name]?.digest != expected["digest"]?.stringValue {
                    verified.repaired.append(name)
                }
            }
            if !verified.repaired.isEmpty {
                // Downloaded again whole, with every other list synced from the date, in one group and one date.
                let fresh = Set(verified.repaired.map { $0 == "members" ? "members" : $0 })
                try await self.replica.pool.write { db in
                    for name in fresh {
                        if let collection = SyncCollection(rawValue: name) { try Replica.clearServer(db, collection) }
                    }
                }
                report = try await self.runSync(fresh: fresh)
                verified.date = report.date
            }
            return SyncReport(date: verified.date, extras: ["verify": .object(["repaired": .array(verified.repaired.map { .string($0) })])])
                .verifyReport(checked: verified.checked)
        }
        .verifyReport
    }

    /// Count and digest of each list as the replica holds the server's versions: SHA-256 over the items sorted by
    /// id (bytes), of `id`, NUL, `modified`, newline.
    static func localDigests(_ db: Database, lists: [String]) throws -> [String: (count: Int, digest: String)] {
        var out: [String: (count: Int, digest: String)] = [:]
        for name in lists {
            guard let collection = SyncCollection(rawValue: name) else { continue }
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, server FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL",
                arguments: [collection.rawValue])
            var entries: [(id: [UInt8], modified: [UInt8])] = rows.map { row in
                let json = (row[1] as String?).flatMap { try? JSONValue.parse($0) }
                return (Array((row[0] as String).utf8), Array((json?["modified"]?.stringValue ?? "").utf8))
            }
            entries.sort { $0.id.lexicographicallyPrecedes($1.id) }
            var bytes: [UInt8] = []
            for entry in entries {
                bytes += entry.id
                bytes.append(0)
                bytes += entry.modified
                bytes.append(10)
            }
            out[name] = (entries.count, SHA256.hex(bytes))
        }
        return out
    }
}

extension SyncReport {
    /// Carries a verify report through the single-flight runner.
    func verifyReport(checked: [String]) -> SyncReport {
        var copy = self
        copy.extras["checked"] = .array(checked.map { .string($0) })
        return copy
    }

    var verifyReport: VerifyReport {
        VerifyReport(
            checked: extras["checked"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            repaired: extras["verify"]?["repaired"]?.arrayValue?.compactMap(\.stringValue) ?? [], date: date)
    }
}
