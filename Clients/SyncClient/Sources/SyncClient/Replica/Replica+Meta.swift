import GRDB

/// Keys of the `meta` table.
enum MetaKey {
    static let date = "date"
    static let limits = "limits.json"
    /// The account whose data the replica holds.
    static let account = "account"
    /// The server's model (`GET /api/v1/model`, its JSON as served).
    static let model = "model.json"
    /// The collections the stored date covers, comma-separated: a collection of the model that is not among them
    /// (one the server added since) is asked without a date, so the date never hides its items.
    static let synced = "collections.synced"

    /// Whether the replica holds the whole list (`nomore`) of a paginated collection, or all children of one parent.
    static func nomore(_ list: SyncCollection, parent: String? = nil) -> String {
        parent.map { "nomore.\(list.rawValue).\($0)" } ?? "nomore.\(list.rawValue)"
    }
}

extension Replica {
    static func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(cached: db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
    }

    static func setMeta(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.executeCached(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.executeCached(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
        }
    }

    static func setFlag(_ db: Database, _ key: String, _ value: Bool) throws {
        try setMeta(db, key, value ? "1" : "0")
    }

    static func flag(_ db: Database, _ key: String) throws -> Bool {
        try meta(db, key) == "1"
    }
}
