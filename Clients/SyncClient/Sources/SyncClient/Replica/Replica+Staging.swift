import GRDB

extension Replica {
    /// The rows of a list replaced whole (a first sync), gathered in a temporary table in the order they arrive and
    /// stored in `items` in id order at the end of the list.
    ///
    /// The server sends a list in modification order, so its ids come in no order: stored one by one, each row lands
    /// at a random place of the replica's two indexes, and past the page cache every insert reads and writes pages
    /// all over the file. Appended to a table without an index, then sorted by SQLite's sorter (bounded memory,
    /// spilling to temporary files), the rows reach the indexes in key order. The result is the one `storeServer`
    /// gives row by row: the same upsert, a later row of an id over an earlier one, inside the caller's transaction
    /// (a failure rolls the temporary rows back with the rest).
    struct Staging {
        private let insert: Statement

        init(_ db: Database) throws {
            try db.executeCached(
                sql:
                    "CREATE TEMP TABLE IF NOT EXISTS syncStaging (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, server TEXT NOT NULL, sortKey TEXT NOT NULL)"
            )
            try db.executeCached(sql: "DELETE FROM temp.syncStaging")
            insert = try db.cachedStatement(sql: "INSERT INTO temp.syncStaging (id, server, sortKey) VALUES (?, ?, ?)")
        }

        func add(_ row: ServerRow) throws {
            try insert.execute(arguments: [row.id, row.text, row.sortKey])
        }

        /// Stores the gathered rows as top-level items of `collection`, and empties the table.
        func store(_ db: Database, _ collection: SyncCollection) throws {
            // `WHERE true`: SQLite's grammar needs a WHERE before an upsert's ON CONFLICT after a SELECT.
            try db.executeCached(
                sql: """
                    INSERT INTO items (collection, parent, id, server, etag, sortKey)
                    SELECT ?, '', id, server, NULL, sortKey FROM temp.syncStaging WHERE true ORDER BY id, seq
                    ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
                        etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
                        sortKey = excluded.sortKey
                    """, arguments: [collection.rawValue])
            try db.executeCached(sql: "DELETE FROM temp.syncStaging")
        }
    }
}
