import Foundation
import GRDB

extension SyncClient {
    /// Proves the replica exact (protocol §11): a sync and `GET /verify` in one group (one snapshot, one date), then
    /// each list's count and digest compared with the replica's. A list that differs is downloaded again whole in a
    /// second sync (unsent edits kept on top) and reported in `repaired`.
    @discardableResult
    public func verify() async throws -> VerifyReport {
        try await flight.run {
            let first = try await self.runSync(verifying: true)
            guard let answer = first.verifyAnswer else { throw SyncClientError.invalid("the group carried no verify answer") }
            let local = try await self.replica.pool.read { db in try Self.localDigests(db, lists: Array(answer.lists.keys)) }
            var report = VerifyReport(checked: answer.lists.keys.sorted(), date: first.date)
            for (name, expected) in answer.lists.sorted(by: { $0.key < $1.key }) {
                guard let mine = local[name], mine.count == expected.count, mine.digest == expected.digest else {
                    report.repaired.append(name)
                    continue
                }
            }
            if !report.repaired.isEmpty {
                let fresh = Set(report.repaired.map { SyncCollection($0) })
                let second = try await self.runSync(fresh: fresh)
                report.date = second.date
            }
            var carrier = SyncReport()
            carrier.date = report.date
            carrier.verifyReport = report
            return carrier
        }
        .verifyReport ?? VerifyReport()
    }

    /// `GET /verify` for the part of each paginated list the replica holds (`<list>LastId`).
    func verifyRequest(_ endpoints: [SyncEndpoint]) async throws -> SubRequest {
        let query = try await replica.pool.read { db in
            var query: [String] = []
            for endpoint in endpoints {
                guard case .paginated(let list) = endpoint.shape, let last = try Replica.lastServerID(db, list.name) else { continue }
                query.append("\(list.name)LastId=\(Self.queryEscape(last))")
            }
            return query
        }
        return SubRequest(id: SyncRequestID.verify, method: "GET", url: "/api/v1/verify" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
    }

    /// Count and digest of each list as the replica holds the server's versions: SHA-256 over the items sorted by
    /// id (bytes), of `id`, NUL, `modified`, newline.
    static func localDigests(_ db: Database, lists: [String]) throws -> [String: VerifyAnswer.List] {
        var out: [String: VerifyAnswer.List] = [:]
        for name in lists {
            let collection = SyncCollection(name)
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
            out[name] = VerifyAnswer.List(count: entries.count, digest: SHA256.hex(bytes))
        }
        return out
    }
}
