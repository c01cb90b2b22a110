import Foundation
import Logging
import PostgresNIO

/// Item rows in PostgreSQL: reads, writes under the family lock, deltas.
extension PostgresStore {

    /// The columns every item query reads, in `StoredItem` order.
    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"
    typealias ItemColumns = (String, Int64, Bool, String?, Int64?, Int64?, String?)

    static func storedItem(_ c: ItemColumns) -> StoredItem {
        StoredItem(id: c.0, version: c.1, deleted: c.2, body: c.3, sortMs: c.4, sortVersion: c.5, tag: c.6)
    }

    static func items(_ rows: PostgresRowSequence) async throws -> [StoredItem] {
        var out: [StoredItem] = []
        for try await c in rows.decode(ItemColumns.self) { out.append(storedItem(c)) }
        return out
    }

    func fetchItem(familyID: String, key: ItemKey, on conn: PostgresConnection) async throws -> StoredItem? {
        for try await c in try await conn.execute(PreparedStatements.Item(familyID: familyID, key: key), logger: logger) {
            return Self.storedItem(c)
        }
        return nil
    }

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await guarded { try await read { conn in try await fetchItem(familyID: familyID, key: key, on: conn) } }
    }

    public func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await guarded {
            try await transaction { conn in
                // Lock the family row first: it orders this write against every other write of the family.
                var found = false
                for try await _ in try await conn.execute(PreparedStatements.LockFamily(familyID: familyID), logger: logger) { found = true }
                guard found else { throw SyncError.unauthorized }
                let existing = try await fetchItem(familyID: familyID, key: key, on: conn)
                var parentRow: StoredItem?
                if let parent { parentRow = try await fetchItem(familyID: familyID, key: parent, on: conn) }
                switch try plan(WriteContext(existing: existing, parent: parentRow)) {
                case .unchanged:
                    return WriteOutcome(item: existing, changed: false)
                case .write(let rows):
                    var version: Int64?
                    var result = existing
                    for row in rows {
                        let stored = try await storeRow(row, familyID: familyID, version: version, nowMs: nowMs, on: conn)
                        version = stored.version
                        if row.key == key { result = stored }
                    }
                    return WriteOutcome(item: result, changed: true)
                }
            }
        }
    }

    /// Writes one row; with no `version` yet, bumps the family counter in the same statement and uses the new value.
    @discardableResult
    func storeRow(
        _ row: RowWrite, familyID: String, version: Int64?, nowMs: Int64, on conn: PostgresConnection
    ) async throws
        -> StoredItem
    {
        let key = row.key
        let deleted = row.body == nil
        let rows = try await conn.query(
            """
            WITH bumped AS (
              UPDATE families SET version = version + 1 WHERE id = \(familyID) AND \(version == nil)
              RETURNING version, pg_notify(\(PostgresChangeListener.channel), id || ':' || version)
            ), v AS (
              SELECT version FROM bumped UNION ALL SELECT \(version ?? 0)::BIGINT WHERE \(version != nil)
            )
            INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
            SELECT \(familyID), \(key.collection), \(key.parentID), \(key.id), v.version, \(deleted), \(row.body), \(nowMs),
                   \(row.sortMs), v.version, \(row.tag) FROM v
            ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
              version = EXCLUDED.version, deleted = EXCLUDED.deleted, body = EXCLUDED.body, modified_ms = EXCLUDED.modified_ms,
              sort_ms = EXCLUDED.sort_ms, tag = EXCLUDED.tag,
              sort_version = CASE WHEN \(row.sortMoved) OR items.sort_version IS NULL THEN EXCLUDED.version ELSE items.sort_version END
            RETURNING version, sort_version
            """, logger: logger)
        var stored: StoredItem?
        for try await (v, sortVersion) in rows.decode((Int64, Int64?).self) {
            stored = StoredItem(
                id: key.id, version: v, deleted: deleted, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion, tag: row.tag)
        }
        guard let stored else { throw SyncError.unauthorized }
        if let children = row.deleteChildren {
            try await conn.query(
                """
                UPDATE items SET deleted = true, body = NULL, version = \(stored.version), modified_ms = \(nowMs)
                WHERE family_id = \(familyID) AND collection = \(children) AND parent_id = \(key.id) AND NOT deleted
                """, logger: logger)
        }
        return stored
    }

    func lockFamily(_ familyID: String, on conn: PostgresConnection) async throws {
        let rows = try await conn.query("SELECT version FROM families WHERE id = \(familyID) FOR UPDATE", logger: logger)
        for try await _ in rows.decode(Int64.self) { return }
        throw SyncError.unauthorized
    }

    public func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await guarded {
            try await read { conn in try await deltaRows(conn: conn, familyID: familyID, collections: collections, since: since) }
        }
    }

    /// One statement: the counter and the rows come from the same snapshot.
    func deltaRows(conn: PostgresConnection, familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        let rows = try await conn.execute(
            PreparedStatements.Delta(familyID: familyID, collections: collections, after: since ?? 0, includeDeleted: since != nil),
            logger: logger)
        var version: Int64?
        var horizon: Int64 = 0
        var items: [String: [StoredItem]] = [:]
        for try await (fv, fh, collection, id, iv, deleted, body, sortMs, sortVersion, tag) in rows {
            version = fv
            horizon = fh
            if let collection, let id, let iv, let deleted {
                items[collection, default: []].append(
                    StoredItem(id: id, version: iv, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag))
            }
        }
        guard let version else { throw SyncError.unauthorized }
        return Delta(version: version, horizon: horizon, rows: items)
    }
}
