import Foundation
import GRDB

/// Item rows in SQLite: reads, writes in the single writer, deltas.
extension SQLiteStore {

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await read { db in try Self.fetchItem(familyID: familyID, key: key, db: db) }
    }

    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"

    static func storedItem(_ row: Row) -> StoredItem {
        StoredItem(id: row[0], version: row[1], deleted: row[2], body: row[3], sortMs: row[4], sortVersion: row[5], tag: row[6])
    }

    static func fetchItem(familyID: String, key: ItemKey, db: Database) throws -> StoredItem? {
        try Row.fetchOne(
            cached: db, sql: "SELECT \(columns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND id = ?",
            arguments: [familyID, key.collection, key.parentID, key.id]
        ).map(storedItem)
    }

    public func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        let outcome = try await write { db in
            guard try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            let existing = try Self.fetchItem(familyID: familyID, key: key, db: db)
            let parentRow = try parent.flatMap { try Self.fetchItem(familyID: familyID, key: $0, db: db) }
            switch try plan(WriteContext(existing: existing, parent: parentRow)) {
            case .unchanged:
                return WriteOutcome(item: existing, changed: false)
            case .write(let rows):
                let version = try Self.bump(familyID: familyID, db: db)
                var result = existing
                for row in rows {
                    let stored = try Self.storeRow(row, familyID: familyID, version: version, nowMs: nowMs, db: db)
                    if row.key == key { result = stored }
                }
                return WriteOutcome(item: result, changed: true)
            }
        }
        if outcome.changed { hub?.notify(family: familyID, version: outcome.item?.version) }
        return outcome
    }

    /// The next version of the family's change counter (inside the caller's write transaction).
    static func bump(familyID: String, db: Database) throws -> Int64 {
        guard
            let version = try Int64.fetchOne(
                cached: db, sql: "UPDATE families SET version = version + 1 WHERE id = ? RETURNING version", arguments: [familyID])
        else { throw SyncError.unauthorized }
        return version
    }

    /// Writes one row at `version` (inside the caller's transaction), tombstoning its children when asked.
    @discardableResult
    static func storeRow(_ row: RowWrite, familyID: String, version: Int64, nowMs: Int64, db: Database) throws -> StoredItem {
        let key = row.key
        let sortVersion = try Int64.fetchOne(
            cached: db,
            sql: """
                INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?5, ?10)
                ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
                  version = excluded.version, deleted = excluded.deleted, body = excluded.body, modified_ms = excluded.modified_ms,
                  sort_ms = excluded.sort_ms, tag = excluded.tag,
                  sort_version = CASE WHEN ?11 OR items.sort_version IS NULL THEN excluded.version ELSE items.sort_version END
                RETURNING sort_version
                """,
            arguments: [
                familyID, key.collection, key.parentID, key.id, version, row.body == nil, row.body, nowMs, row.sortMs, row.tag,
                row.sortMoved,
            ])
        if let children = row.deleteChildren {
            try db.executeCached(
                sql: """
                    UPDATE items SET deleted = 1, body = NULL, version = ?, modified_ms = ?
                    WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                    """,
                arguments: [version, nowMs, familyID, children, key.id])
        }
        return StoredItem(
            id: key.id, version: version, deleted: row.body == nil, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion,
            tag: row.tag)
    }

    public func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await read { db in
            // One read transaction: the counter and the rows come from the same snapshot.
            guard
                let family = try Row.fetchOne(cached: db, sql: "SELECT version, horizon FROM families WHERE id = ?", arguments: [familyID])
            else { throw SyncError.unauthorized }
            var rows: [String: [StoredItem]] = [:]
            for collection in collections {
                rows[collection] = try Row.fetchAll(
                    cached: db,
                    sql: """
                        SELECT \(Self.columns) FROM items
                        WHERE family_id = ? AND collection = ? AND parent_id = '' AND version > ? AND (? OR NOT deleted)
                        ORDER BY version
                        """,
                    arguments: [familyID, collection, since ?? 0, since != nil]
                ).map(Self.storedItem)
            }
            return Delta(version: family[0], horizon: family[1], rows: rows)
        }
    }
}
