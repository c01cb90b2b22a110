import GRDB

extension Replica {
    /// The sort key of an item: its sort field (RFC 3339 UTC with milliseconds sorts as text); an item without one
    /// (created here, not yet pushed) sorts first, as the server will put it.
    static func sortKey(_ sortField: String?, _ item: JSONObject?) -> String {
        guard let field = sortField else { return "" }
        return item?[field]?.stringValue ?? "~"
    }

    /// One item as the replica stores the server's version of it: its id, its text (compact JSON, keys sorted, without
    /// the children and `nomore` it carries in sync answers: the replica keeps those as their own rows) and its sort
    /// key. Nil for an item without a string id (it is not stored).
    struct ServerRow: Sendable, Equatable {
        var id: String
        var text: String
        var sortKey: String
    }

    static func serverRow(_ collection: ServerModel.Collection, _ item: JSONObject) -> ServerRow? {
        guard let id = item["id"]?.stringValue else { return nil }
        var stored = item
        if let children = collection.children { stored[children.rawValue] = nil }
        stored["nomore"] = nil
        return ServerRow(id: id, text: stored.jsonText, sortKey: sortKey(collection.sortField, stored))
    }

    /// Stores the server's version of an item, keeping an unsent local edit on top of it.
    static func storeServer(_ db: Database, _ collection: ServerModel.Collection, parent: String = "", _ item: JSONObject, etag: String? = nil) throws
    {
        guard let row = serverRow(collection, item) else { return }
        try storeServer(db, collection.name, parent: parent, row, etag: etag)
    }

    /// Stores a row made by `serverRow` (or, from an answer's bytes, by `CanonicalItem`), with one prepared statement
    /// for every row of a sync (`upsert`, when the caller holds it, saves even the statement cache's lookup).
    static func storeServer(
        _ db: Database, _ collection: SyncCollection, parent: String = "", _ row: ServerRow, etag: String? = nil, upsert: Statement? = nil
    ) throws {
        let statement = try upsert ?? upsertStatement(db)
        try statement.execute(arguments: [collection.rawValue, parent, row.id, row.text, etag, row.sortKey])
    }

    /// The statement `storeServer` runs: the server's version replaced, an unsent local edit kept, the ETag kept
    /// while the server's text is the same.
    static func upsertStatement(_ db: Database) throws -> Statement {
        try db.cachedStatement(
            sql: """
                INSERT INTO items (collection, parent, id, server, etag, sortKey) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
                    etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
                    sortKey = excluded.sortKey
                """)
    }

    /// The server deleted an item: it goes, with its children, unless an unsent local edit keeps it.
    static func removeServer(_ db: Database, _ collection: ServerModel.Collection, parent: String = "", id: String) throws {
        try db.executeCached(
            sql: "DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND local IS NULL AND localDeleted = 0",
            arguments: [collection.name.rawValue, parent, id])
        try db.executeCached(
            sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [collection.name.rawValue, parent, id])
        if let child = collection.childCollection {
            try clearServer(db, child, parent: id)
            try setMeta(db, MetaKey.nomore(child.name, parent: id), nil)
        }
    }

    /// Forgets the server's versions of a whole list (a `sync: false` or `crop` answer replaces it), keeping rows
    /// that carry unsent edits. For a paginated list, its children go too.
    static func clearServer(_ db: Database, _ collection: ServerModel.Collection, parent: String? = nil) throws {
        let scope = parent == nil ? "" : " AND parent = ?"
        var arguments: StatementArguments = [collection.name.rawValue]
        if let parent { _ = arguments.append(contentsOf: [parent]) }
        if let child = collection.childCollection, parent == nil {
            try db.executeCached(
                sql: "DELETE FROM items WHERE collection = ? AND local IS NULL AND localDeleted = 0", arguments: [child.name.rawValue])
            try db.executeCached(sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ?", arguments: [child.name.rawValue])
            try db.executeCached(sql: "DELETE FROM meta WHERE key LIKE ?", arguments: ["nomore.\(child.name.rawValue).%"])
        }
        if parent == nil || parent == "" {
            // Its held count goes with it (the rows below then skip the count's update), counted again at the sync's end.
            try db.executeCached(sql: "DELETE FROM heldCounts WHERE collection = ?", arguments: [collection.name.rawValue])
        }
        try db.executeCached(
            sql: "DELETE FROM items WHERE collection = ?\(scope) AND local IS NULL AND localDeleted = 0", arguments: arguments)
        try db.executeCached(sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ?\(scope)", arguments: arguments)
    }

    /// Erases every item, the queue, the failed list (unless `keepingFailed`), the sync state and the server's limits
    /// (logout, reset, another account); the model stays. The file stays, so open observations keep working and see
    /// empty results.
    static func eraseData(_ db: Database, keepingFailed: Bool = false) throws {
        try db.execute(sql: "DELETE FROM heldCounts; DELETE FROM items; DELETE FROM queue; DELETE FROM conflicts")
        if keepingFailed {
            // The account stays with its failed writes: the same account signing in again finds them; another
            // account's sign-in erases them.
            try db.executeCached(sql: "DELETE FROM meta WHERE key NOT IN (?, ?)", arguments: [MetaKey.model, MetaKey.account])
        } else {
            try db.executeCached(sql: "DELETE FROM failed")
            try db.executeCached(sql: "DELETE FROM meta WHERE key != ?", arguments: [MetaKey.model])
        }
    }
}
