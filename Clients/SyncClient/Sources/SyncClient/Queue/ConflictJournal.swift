import Foundation
import GRDB

/// One write conflict and how it was settled: what the app shows ("your edit of the notes was replaced") and what
/// `SyncClient.undo(_:)` puts back.
public struct ConflictRecord: Sendable, Equatable, Identifiable {
    /// How a conflict was settled.
    public enum Resolution: String, Sendable, Equatable {
        /// The two sides changed different fields: both kept, by the SDK.
        case merged
        /// Both changed `fields`; the server's values were kept there, the local edit of the other fields too.
        case serverKeptFields
        /// The local edit was dropped (the app's handler, or an item deleted on one side).
        case keptServer
        /// The local edit was written over the server's version (the app's handler).
        case keptLocal
        /// The app's handler wrote its own merge.
        case handlerMerged
    }

    public let id: Int64
    public let date: Date
    public let collection: SyncCollection
    public let parent: String?
    public let itemID: String
    public let resolution: Resolution
    /// The fields both sides changed (none for `merged`).
    public let fields: [String]
    public let base: JSONObject?
    public let local: JSONObject?
    public let server: JSONObject?
    /// What the item became (nil: deleted).
    public let result: JSONObject?
}

/// The three-way merge of one conflict, field by field: the fields each side changed since the base, and the ones
/// both changed to different values.
struct FieldMerge {
    let merged: JSONObject
    let conflicting: [String]
    let localChanged: Set<String>

    /// `base`, `local` and `server` of one item (all present); `ignored`: the server-set fields.
    init(base: JSONObject, local: JSONObject, server: JSONObject, ignored: Set<String>) {
        let keys = Set(base.keys).union(local.keys).union(server.keys).subtracting(ignored)
        var merged = server
        var conflicting: [String] = []
        var localChanged = Set<String>()
        for key in keys {
            let was = base[key] ?? .null
            let mine = local[key] ?? .null
            let theirs = server[key] ?? .null
            guard mine != was else { continue }
            localChanged.insert(key)
            if theirs != was, theirs != mine {
                conflicting.append(key)
            } else {
                merged[key] = mine
            }
        }
        self.merged = merged
        self.conflicting = conflicting.sorted()
        self.localChanged = localChanged
    }

    /// The merge with the local values of `fields` too (an app that keeps its side of those).
    func keepingLocal(_ fields: [String], from local: JSONObject) -> JSONObject {
        var result = merged
        for field in fields { result[field] = local[field] ?? .null }
        return result
    }
}

extension Replica {
    static func journal(
        _ db: Database, _ op: PendingOperation, _ resolution: ConflictRecord.Resolution, fields: [String], base: JSONObject?,
        local: JSONObject?, server: JSONObject?, result: JSONObject?
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO conflicts (atMs, collection, parent, id, resolution, fields, base, local, server, result)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                Int64(Date().timeIntervalSince1970 * 1000), op.collection.rawValue, op.parent ?? "", op.id, resolution.rawValue,
                fields.joined(separator: ","), base?.jsonText, local?.jsonText, server?.jsonText, result?.jsonText,
            ])
    }
}

extension SyncClient {
    /// The write conflicts settled so far, oldest first: what each side held and what the item became.
    public func conflictJournal() throws -> [ConflictRecord] {
        try replica.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM conflicts ORDER BY seq").map { row in
                func object(_ column: String) -> JSONObject? { (row[column] as String?).flatMap { try? JSONValue.parse($0).objectValue } }
                let fields: String = row["fields"]
                let parent: String = row["parent"]
                return ConflictRecord(
                    id: row["seq"], date: Date(timeIntervalSince1970: Double(row["atMs"] as Int64) / 1000),
                    collection: SyncCollection(row["collection"] as String), parent: parent.isEmpty ? nil : parent, itemID: row["id"],
                    resolution: ConflictRecord.Resolution(rawValue: row["resolution"]) ?? .keptServer,
                    fields: fields.isEmpty ? [] : fields.split(separator: ",").map(String.init), base: object("base"), local: object("local"),
                    server: object("server"), result: object("result"))
            }
        }
    }

    /// Forgets the journal (after the app showed it).
    public func clearConflictJournal() async throws {
        try await replica.pool.write { db in try db.execute(sql: "DELETE FROM conflicts") }
    }

    /// Puts the local edit of a settled conflict back: saved again (and pushed) over what the item is now. A local
    /// delete is deleted again.
    public func undo(_ record: ConflictRecord) async throws {
        if let local = record.local {
            try await save(record.collection, id: record.itemID, parent: record.parent, json: local)
        } else {
            try await delete(record.collection, id: record.itemID, parent: record.parent)
        }
    }
}
