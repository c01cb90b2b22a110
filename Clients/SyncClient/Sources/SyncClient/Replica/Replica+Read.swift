import GRDB

extension Replica {
    /// The items of a collection as the app sees them: the server's, with unsent edits on top, in the server's order
    /// for paginated and child lists (newest first, then id descending), by id otherwise. `sorted` says which, from
    /// the model; without it the rows tell (a list's items have an empty sort key, a sorted list's never have one),
    /// at the cost of a sort the primary key would spare.
    public static func visibleItems(_ db: Database, _ collection: SyncCollection, parent: String? = nil, sorted: Bool? = nil) throws -> [JSONObject] {
        try visibleTexts(db, collection, parent: parent, sorted: sorted).compactMap { text in (try? JSONValue.parse(text))?.objectValue }
    }

    /// The visible items' JSON texts, in the same order (a typed read decodes them with no `JSONValue` in between).
    static func visibleTexts(_ db: Database, _ collection: SyncCollection, parent: String? = nil, sorted: Bool? = nil) throws -> [String] {
        let order =
            switch sorted {
            case true?: "sortKey DESC, id DESC"
            case false?: "id"
            case nil: "sortKey DESC, CASE WHEN sortKey = '' THEN id END, id DESC"
            }
        return try String.fetchAll(
            db,
            sql: """
                SELECT COALESCE(local, server) FROM items
                WHERE collection = ? AND parent = ? AND localDeleted = 0 AND COALESCE(local, server) IS NOT NULL
                ORDER BY \(order)
                """, arguments: [collection.rawValue, parent ?? ""])
    }

    /// One visible item (nil when absent or deleted locally).
    public static func visibleItem(_ db: Database, _ collection: SyncCollection, id: String, parent: String? = nil) throws -> JSONObject? {
        guard
            let text = try String.fetchOne(
                db,
                sql: "SELECT COALESCE(local, server) FROM items WHERE collection = ? AND parent = ? AND id = ? AND localDeleted = 0",
                arguments: [collection.rawValue, parent ?? "", id])
        else { return nil }
        return try JSONValue.parse(text).objectValue
    }

    /// The last item the replica holds of a server-ordered list (the `lastId` of protocol §4), from the server's
    /// versions only: an item created here and not yet pushed has no place in the server's order.
    static func lastServerID(_ db: Database, _ collection: SyncCollection, parent: String = "") throws -> String? {
        try String.fetchOne(
            db,
            sql: """
                SELECT id FROM items WHERE collection = ? AND parent = ? AND server IS NOT NULL
                ORDER BY sortKey ASC, id ASC LIMIT 1
                """, arguments: [collection.rawValue, parent])
    }

    /// How many server items of a list the replica holds: the row the triggers keep, or a count when a clear dropped
    /// it and no sync recounted it yet.
    static func serverCount(_ db: Database, _ collection: SyncCollection) throws -> Int {
        try keptCount(db, collection) ?? countHeld(db, collection)
    }

    /// The count the triggers keep for a list; nil when a clear dropped it.
    static func keptCount(_ db: Database, _ collection: SyncCollection) throws -> Int? {
        try Int.fetchOne(cached: db, sql: "SELECT n FROM heldCounts WHERE collection = ?", arguments: [collection.rawValue])
    }

    /// Counts a list's server items: all its rows less the ones without a server version (both counts read an index
    /// only: the primary key's, and the partial index of rows without one).
    static func countHeld(_ db: Database, _ collection: SyncCollection) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT (SELECT COUNT(*) FROM items WHERE collection = ?1 AND parent = '')
                    - (SELECT COUNT(*) FROM items WHERE collection = ?1 AND parent = '' AND server IS NULL)
                """, arguments: [collection.rawValue]) ?? 0
    }

    /// Counts again, and keeps, each list's count that a clear dropped (at the end of a sync's transaction).
    static func recountHeld(_ db: Database, _ collections: [SyncCollection]) throws {
        for collection in collections {
            // Only a dropped count is counted: a kept one is exact, and counting reads the whole list's index.
            guard try keptCount(db, collection) == nil else { continue }
            try db.executeCached(
                sql: "INSERT INTO heldCounts (collection, n) VALUES (?, ?)", arguments: [collection.rawValue, try countHeld(db, collection)])
        }
    }
}
