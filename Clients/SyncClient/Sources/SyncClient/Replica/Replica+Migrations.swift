import GRDB

extension Replica {
    /// The replica's schema, one migration per change; a replica written by an older SDK is brought forward on open.
    ///
    /// - `items`: one row per item: `server` (the server's JSON, the base of a conflict), `etag` (its version, when
    ///   known), `local` (an unsent edit), `localDeleted`, and `sortKey` (the server's sort field) for ordered lists.
    /// - `meta`: the date of sync, per-list and per-parent `nomore`, the server's limits.
    /// - `queue`: unsent writes in order, one per item (later edits fold into it); `sent` once a push has read the
    ///   entry (it may have reached the server: a delete of the item is then sent, never folded away); `failed`:
    ///   refused writes.
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
        migrator.registerMigration("002-queue-sent") { db in
            try db.execute(sql: "ALTER TABLE queue ADD COLUMN sent INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("003-uploads") { db in
            // Media waiting to leave (their bytes in the media folder), first in first out; `status` and `code` once
            // the server refused one for good.
            try db.execute(
                sql: """
                    CREATE TABLE uploads (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, sha256 TEXT NOT NULL UNIQUE, contentType TEXT NOT NULL,
                        size INTEGER NOT NULL, status INTEGER, code TEXT)
                    """)
        }
        return migrator
    }
}
