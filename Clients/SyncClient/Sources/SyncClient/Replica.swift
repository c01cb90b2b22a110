import Foundation
import GRDB

/// The local copy of a family's data: a SQLite file (GRDB, WAL) holding each item as the server last sent it, the
/// unsent local edit on top of it, the date of sync, the `nomore` flags and the queue of writes to push.
///
/// Every change the SDK makes to it is one transaction: a pulled answer with its new date, or a local edit with its
/// queue entry, so a crash never leaves it half-applied.
public final class Replica: Sendable {
    public let pool: DatabasePool

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("001-replica") { db in
            try db.execute(
                sql: """
                    CREATE TABLE items (
                        collection TEXT NOT NULL,
                        parent TEXT NOT NULL DEFAULT '',
                        id TEXT NOT NULL,
                        server TEXT,
                        etag TEXT,
                        local TEXT,
                        localDeleted INTEGER NOT NULL DEFAULT 0,
                        sortKey TEXT NOT NULL DEFAULT '',
                        PRIMARY KEY (collection, parent, id));
                    CREATE INDEX items_sorted ON items (collection, parent, sortKey, id);
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE queue (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        collection TEXT NOT NULL, parent TEXT NOT NULL, id TEXT NOT NULL,
                        op TEXT NOT NULL, body TEXT, rev INTEGER NOT NULL DEFAULT 1,
                        UNIQUE (collection, parent, id));
                    CREATE TABLE failed (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        collection TEXT NOT NULL, parent TEXT NOT NULL, id TEXT NOT NULL,
                        op TEXT NOT NULL, body TEXT, status INTEGER NOT NULL, code TEXT NOT NULL, detail TEXT NOT NULL);
                    """)
        }
        return migrator
    }

    // MARK: Meta

    static func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
    }

    static func setMeta(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
        }
    }

    // MARK: Reading

    /// The items of a collection as the app sees them: the server's, with unsent edits on top, in the server's order
    /// for paginated and child lists (newest first, then id descending), by id otherwise.
    public static func visibleItems(_ db: Database, _ collection: SyncCollection, parent: String? = nil) throws -> [JSONObject] {
        let order = collection.sortField == nil ? "id" : "sortKey DESC, id DESC"
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT COALESCE(local, server) FROM items
                WHERE collection = ? AND parent = ? AND localDeleted = 0 AND COALESCE(local, server) IS NOT NULL
                ORDER BY \(order)
                """, arguments: [collection.rawValue, parent ?? ""])
        return rows.compactMap { row in (try? JSONValue.parse(row[0] as String))?.objectValue }
    }

    /// One visible item.
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

    static func serverCount(_ db: Database, _ collection: SyncCollection, parent: String = "") throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM items WHERE collection = ? AND parent = ? AND server IS NOT NULL",
            arguments: [collection.rawValue, parent]) ?? 0
    }

    // MARK: Writing server state

    /// The sort key of an item: its sort field (RFC 3339 UTC with milliseconds sorts as text).
    static func sortKey(_ collection: SyncCollection, _ item: JSONObject?) -> String {
        guard let field = collection.sortField else { return "" }
        return item?[field]?.stringValue ?? "~"
    }

    /// Stores the server's version of an item, keeping an unsent local edit on top of it.
    static func storeServer(_ db: Database, _ collection: SyncCollection, parent: String = "", _ item: JSONObject, etag: String? = nil) throws {
        guard let id = item["id"]?.stringValue else { return }
        var stored = item
        // Children travel inside their parent in sync answers; the replica keeps them as their own rows.
        stored["messages"] = nil
        stored["comments"] = nil
        stored["nomore"] = nil
        try db.execute(
            sql: """
                INSERT INTO items (collection, parent, id, server, etag, sortKey) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
                    etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
                    sortKey = excluded.sortKey
                """, arguments: [collection.rawValue, parent, id, stored.jsonText, etag, sortKey(collection, stored)])
    }

    /// The server deleted an item: it goes, with its children, unless an unsent local edit keeps it.
    static func removeServer(_ db: Database, _ collection: SyncCollection, parent: String = "", id: String) throws {
        try db.execute(
            sql: "DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND local IS NULL AND localDeleted = 0",
            arguments: [collection.rawValue, parent, id])
        try db.execute(
            sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ? AND parent = ? AND id = ?",
            arguments: [collection.rawValue, parent, id])
        if let child = collection.childCollection { try clearServer(db, child, parent: id) }
    }

    /// Forgets the server's versions of a whole list (a `sync: false` or `crop` answer replaces it), keeping rows
    /// that carry unsent edits.
    static func clearServer(_ db: Database, _ collection: SyncCollection, parent: String? = nil) throws {
        let scope = parent == nil ? "" : " AND parent = ?"
        var arguments: StatementArguments = [collection.rawValue]
        if let parent { _ = arguments.append(contentsOf: [parent]) }
        if let child = collection.childCollection, parent == nil {
            try db.execute(
                sql: "DELETE FROM items WHERE collection = ? AND local IS NULL AND localDeleted = 0", arguments: [child.rawValue])
            try db.execute(sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ?", arguments: [child.rawValue])
        }
        try db.execute(
            sql: "DELETE FROM items WHERE collection = ?\(scope) AND local IS NULL AND localDeleted = 0", arguments: arguments)
        try db.execute(sql: "UPDATE items SET server = NULL, etag = NULL WHERE collection = ?\(scope)", arguments: arguments)
    }

    /// Erases every item, the queue, the failed list and the sync state (logout, reset).
    static func eraseData(_ db: Database, keepingSession: Bool) throws {
        try db.execute(sql: "DELETE FROM items; DELETE FROM queue; DELETE FROM failed")
        if keepingSession {
            try db.execute(sql: "DELETE FROM meta WHERE key NOT LIKE 'session.%' AND key NOT LIKE 'limits.%'")
        } else {
            try db.execute(sql: "DELETE FROM meta")
        }
    }
}
