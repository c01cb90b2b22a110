import GRDB
import SyncAPI

/// The item statements in SQLite's SQL, on the GRDB connection of the current access; every statement is parsed once
/// per connection (`cachedStatement`).
///
/// Its methods are synchronous (they satisfy the `async` requirements of `ItemStatements`) and must run on the
/// connection's queue: the shared orchestration runs there through `ConnectionThreadExecutor`, and the value never
/// outlives the access that lent the connection, hence `@unchecked Sendable`.
package struct SQLiteItemStatements: ItemStatements, @unchecked Sendable {
    package let db: Database

    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"

    static func storedItem(_ row: Row) -> StoredItem {
        StoredItem(id: row[0], version: row[1], deleted: row[2], body: row[3], sortMs: row[4], sortVersion: row[5], tag: row[6])
    }

    /// The items a statement of `columns` gives, decoded from its cursor as they are stepped: `Row.fetchAll` copies
    /// every row before it is decoded (the copy and its decoding are a visible part of a SQLite delta's cost).
    static func storedItems(_ statement: Statement, arguments: StatementArguments) throws -> [StoredItem] {
        var items: [StoredItem] = []
        let cursor = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try cursor.next() { items.append(storedItem(row)) }
        return items
    }

    static let familySQL = "SELECT version, horizon, live_items, stored_bytes FROM families WHERE id = ?"
    static let itemSQL = "SELECT \(columns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND id = ?"
    static let deltaSQL = """
        SELECT \(columns) FROM items
        WHERE family_id = ? AND collection = ? AND parent_id = '' AND version > ? AND (? OR NOT deleted)
        ORDER BY version
        """

    /// SQLite has one writer at a time: inside a write transaction the family is already ordered, `lock` adds nothing.
    package func family(_ spaceID: String, lock: Bool) throws -> FamilyCounter? {
        try Row.fetchOne(db.cachedStatement(sql: Self.familySQL), arguments: [spaceID]).map {
            FamilyCounter(version: $0[0], horizon: $0[1], usage: FamilyUsage(items: $0[2], bytes: $0[3]))
        }
    }

    package func item(spaceID: String, key: ItemKey) throws -> StoredItem? {
        try Row.fetchOne(db.cachedStatement(sql: Self.itemSQL), arguments: [spaceID, key.collection, key.parentID, key.id])
            .map(Self.storedItem)
    }

    /// The next version of the family's change counter (inside the caller's write transaction).
    package func bump(spaceID: String) throws -> Int64 {
        guard
            let version = try Int64.fetchOne(
                cached: db, sql: "UPDATE families SET version = version + 1 WHERE id = ? RETURNING version", arguments: [spaceID])
        else { throw SyncError.unauthorized }
        return version
    }

    package func touchMedia(spaceID: String, hashes: [String], nowMs: Int64) throws {
        for hash in hashes {
            try db.executeCached(
                sql: "UPDATE media SET referenced_ms = max(referenced_ms, ?) WHERE family_id = ? AND sha256 = ?",
                arguments: [nowMs, spaceID, hash])
        }
    }

    @discardableResult
    package func store(_ row: RowWrite, spaceID: String, version: Int64?, nowMs: Int64) throws -> StoredItem {
        let key = row.key
        let version = try version ?? bump(spaceID: spaceID)
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
                spaceID, key.collection, key.parentID, key.id, version, row.body == nil, row.body, nowMs, row.sortMs, row.tag,
                row.sortMoved,
            ])
        if let children = row.deleteChildren {
            // The media the children name lasts a retention from now, as a deleted post's does.
            var hashes = Set<String>()
            let bodies = try String.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT body FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                        AND instr(body, ?) > 0
                        """), arguments: [spaceID, children, key.id, MediaURL.prefix])
            while let body = try bodies.next() {
                hashes.formUnion(MediaURL.hashes(in: [body]))
            }
            if !hashes.isEmpty { try touchMedia(spaceID: spaceID, hashes: hashes.sorted(), nowMs: nowMs) }
            try db.executeCached(
                sql: """
                    UPDATE items SET deleted = 1, body = NULL, version = ?, modified_ms = ?
                    WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                    """,
                arguments: [version, nowMs, spaceID, children, key.id])
        }
        return StoredItem(
            id: key.id, version: version, deleted: row.body == nil, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion,
            tag: row.tag)
    }

    /// The counter, then one statement per collection, in the caller's read transaction (one snapshot).
    package func delta(spaceID: String, collections: [String], since: Int64?) throws -> Delta? {
        guard let family = try family(spaceID, lock: false) else { return nil }
        var rows = DeltaRows()
        for collection in collections {
            let cursor = try Row.fetchCursor(
                db.cachedStatement(sql: Self.deltaSQL), arguments: [spaceID, collection, since ?? 0, since != nil])
            while let row = try cursor.next(), !rows.overflowed { rows.append(Self.storedItem(row), to: collection) }
        }
        return rows.delta(version: family.version, horizon: family.horizon)
    }

    /// The primary key's order is the id's byte order (BINARY collation); `modified` read by SQLite's JSON functions.
    package func verifyRows(spaceID: String, collection: String, _ each: @Sendable (VerifyRow) -> Void) throws {
        let cursor = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT id, json_extract(body, '$.modified'), sort_ms, tag FROM items
                    WHERE family_id = ? AND collection = ? AND parent_id = '' AND NOT deleted ORDER BY id
                    """), arguments: [spaceID, collection])
        while let row = try cursor.next() {
            each(VerifyRow(collection: collection, id: row[0], modified: row[1], sortMs: row[2], tag: row[3]))
        }
    }

    /// Served by the index `items_order` (family, collection, parent, sort key, id).
    package func liveItems(
        _ query: PageQuery, spaceID: String, changedAfter: Int64?, bound: AnchorBound?, oldestFirst: Bool, limit: Int, budget: Int?
    ) throws -> [StoredItem] {
        var sql = "SELECT \(Self.sizedColumns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted"
        var arguments: StatementArguments = [spaceID, query.collection, query.parentID]
        if let tags = query.tags {
            sql += " AND tag IN (\(tags.map { _ in "?" }.joined(separator: ",")))"
            arguments += StatementArguments(tags)
        }
        if let changedAfter {
            sql += " AND version > ?"
            arguments += [changedAfter]
        }
        switch bound {
        case .atOrAbove(let anchor):
            sql += " AND (sort_ms, id) >= (?, ?)"
            arguments += [anchor.sortMs, anchor.id]
        case .below(let anchor):
            sql += " AND (sort_ms, id) < (?, ?)"
            arguments += [anchor.sortMs, anchor.id]
        case nil:
            break
        }
        sql += oldestFirst ? " ORDER BY sort_ms ASC, id ASC LIMIT ?" : " ORDER BY sort_ms DESC, id DESC LIMIT ?"
        var bytes = budget.map(PageBytes.init)
        var items: [StoredItem] = []
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments + [limit])
        while let row = try cursor.next() { items.append(Self.pageItem(row, &bytes)) }
        return items
    }

    /// `columns` and the body's size in bytes, read before the body is.
    static let sizedColumns = columns + ", length(CAST(body AS BLOB))"

    /// A row of `sizedColumns`, its body withheld (never decoded) when it does not fit `bytes`.
    static func pageItem(_ row: Row, _ bytes: inout PageBytes?) -> StoredItem {
        guard bytes?.keep(row[7]) ?? true else {
            return StoredItem(id: row[0], version: row[1], deleted: row[2], body: nil, sortMs: row[4], sortVersion: row[5], tag: row[6])
        }
        return storedItem(row)
    }

    package func goneIDs(_ query: PageQuery, spaceID: String, since: Int64) throws -> [String] {
        let outside = query.tags.map { " OR tag IS NULL OR tag NOT IN (\($0.map { _ in "?" }.joined(separator: ",")))" } ?? ""
        return try String.fetchAll(
            cached: db,
            sql: "SELECT id FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND version > ? AND (deleted"
                + outside + ") ORDER BY version",
            arguments: [spaceID, query.collection, query.parentID, since] + StatementArguments(query.tags ?? []))
    }

    /// One indexed statement per parent (cheap in-process; SQLite has no round trips to save).
    package func children(_ children: ChildrenQuery, spaceID: String, of parentIDs: [String], budget: Int) throws -> [String: [StoredItem]] {
        var out: [String: [StoredItem]] = [:]
        var bytes: PageBytes? = PageBytes(budget: budget)
        let statement = try db.cachedStatement(
            sql: """
                SELECT \(Self.sizedColumns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                ORDER BY sort_ms DESC, id DESC LIMIT ?
                """)
        for parentID in parentIDs {
            var items: [StoredItem] = []
            let cursor = try Row.fetchCursor(statement, arguments: [spaceID, children.collection, parentID, children.limit])
            while let row = try cursor.next() { items.append(Self.pageItem(row, &bytes)) }
            out[parentID] = items
        }
        return out
    }
}
