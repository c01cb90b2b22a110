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
        migrator.registerMigration("004-stamps") { db in
            // One counter per collection, bumped by every change of its items: an observation of one collection reads
            // its own row, and stays asleep when other collections change.
            // (Its rows are made by the triggers of migration 006, for whatever collections a model has.)
            try db.execute(sql: "CREATE TABLE stamps (collection TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)")
            for (event, row) in [("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")] {
                try db.execute(
                    sql: """
                        CREATE TRIGGER items_stamp_\(event.lowercased()) AFTER \(event) ON items
                        BEGIN UPDATE stamps SET n = n + 1 WHERE collection = \(row).collection; END
                        """)
            }
        }
        migrator.registerMigration("005-stamps-bulk") { db in
            // A bulk apply (a sync's rows) moves each collection's stamp once, at its first row: a `*` row in
            // `stampsBulk` marks the apply, and each collection bumped during it gets a row that silences the trigger
            // for its next rows (one key lookup per row instead of an update). Collections the sync leaves alone are
            // not bumped, so their observers stay asleep.
            try db.execute(sql: "CREATE TABLE stampsBulk (collection TEXT PRIMARY KEY)")
            for (event, row) in [("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")] {
                try db.execute(sql: "DROP TRIGGER items_stamp_\(event.lowercased())")
                try db.execute(
                    sql: """
                        CREATE TRIGGER items_stamp_\(event.lowercased()) AFTER \(event) ON items
                        WHEN NOT EXISTS (SELECT 1 FROM stampsBulk WHERE collection = \(row).collection)
                        BEGIN
                            UPDATE stamps SET n = n + 1 WHERE collection = \(row).collection;
                            INSERT INTO stampsBulk (collection)
                                SELECT \(row).collection WHERE EXISTS (SELECT 1 FROM stampsBulk WHERE collection = '*');
                        END
                        """)
            }
        }
        migrator.registerMigration("006-any-model") { db in
            // Any model's collections: a collection's stamp row is made by its first change (not by `INSERT OR IGNORE`:
            // an upsert on `items` would impose its own conflict policy on the trigger's statements). A replica made by SDK
            // 0.2.0 synced the default model's collections from its date on: recorded, so that they are not
            // downloaded again (a collection the replica never synced is asked without a date, `MetaKey.synced`).
            for (event, row) in [("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")] {
                try db.execute(sql: "DROP TRIGGER items_stamp_\(event.lowercased())")
                try db.execute(
                    sql: """
                        CREATE TRIGGER items_stamp_\(event.lowercased()) AFTER \(event) ON items
                        WHEN NOT EXISTS (SELECT 1 FROM stampsBulk WHERE collection = \(row).collection)
                        BEGIN
                            INSERT INTO stamps (collection)
                                SELECT \(row).collection WHERE NOT EXISTS (SELECT 1 FROM stamps WHERE collection = \(row).collection);
                            UPDATE stamps SET n = n + 1 WHERE collection = \(row).collection;
                            INSERT INTO stampsBulk (collection)
                                SELECT \(row).collection WHERE EXISTS (SELECT 1 FROM stampsBulk WHERE collection = '*');
                        END
                        """)
            }
            if try Replica.meta(db, MetaKey.date) != nil {
                let synced = "accounts,comments,contacts,events,family,members,messages,places,settings,threads,wall"
                try Replica.setMeta(db, MetaKey.synced, synced)
            }
        }
        migrator.registerMigration("007-conflict-journal") { db in
            // How each write conflict was settled, for the app to show and undo (`SyncClient.conflictJournal()`).
            try db.execute(
                sql: """
                    CREATE TABLE conflicts (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        atMs INTEGER NOT NULL,
                        collection TEXT NOT NULL,
                        parent TEXT NOT NULL,
                        id TEXT NOT NULL,
                        resolution TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        base TEXT, local TEXT, server TEXT, result TEXT)
                    """)
        }
        migrator.registerMigration("008-held-counts") { db in
            // How many server items each list holds, kept by triggers, so that the status reads one row per list
            // after a sync instead of counting the list. A clear (a list replaced whole) drops its row: its rows then
            // cost one missed lookup each, and the list is counted once at the end of the sync (`recountHeld`).
            // The partial index holds the few rows without a server version (unsent creations), so that the count
            // is two index-only counts.
            try db.execute(
                sql: """
                    CREATE TABLE heldCounts (collection TEXT PRIMARY KEY, n INTEGER NOT NULL);
                    CREATE INDEX items_serverless ON items (collection, parent) WHERE server IS NULL;
                    CREATE TRIGGER items_held_insert AFTER INSERT ON items WHEN NEW.parent = '' AND NEW.server IS NOT NULL
                    BEGIN UPDATE heldCounts SET n = n + 1 WHERE collection = NEW.collection; END;
                    CREATE TRIGGER items_held_delete AFTER DELETE ON items WHEN OLD.parent = '' AND OLD.server IS NOT NULL
                    BEGIN UPDATE heldCounts SET n = n - 1 WHERE collection = OLD.collection; END;
                    CREATE TRIGGER items_held_update AFTER UPDATE OF server ON items
                    WHEN NEW.parent = '' AND (OLD.server IS NULL) != (NEW.server IS NULL)
                    BEGIN
                        UPDATE heldCounts SET n = n + (NEW.server IS NOT NULL) - (OLD.server IS NOT NULL)
                        WHERE collection = NEW.collection;
                    END;
                    INSERT INTO heldCounts (collection, n)
                        SELECT collection, COUNT(*) FROM items WHERE parent = '' AND server IS NOT NULL GROUP BY collection;
                    """)
        }
        return migrator
    }
}

extension Replica {
    /// Starts a bulk apply, inside the caller's transaction: each collection's stamp moves once, at its first row.
    static func beginBulkStamps(_ db: Database) throws {
        try db.executeCached(sql: "INSERT OR IGNORE INTO stampsBulk (collection) VALUES ('*')")
    }

    /// Ends it (a rollback ends it too).
    static func endBulkStamps(_ db: Database) throws {
        try db.executeCached(sql: "DELETE FROM stampsBulk")
    }

    /// The change counter of a collection's items (`stamps`).
    static func stamp(_ db: Database, _ collection: SyncCollection) throws -> Int {
        try Int.fetchOne(cached: db, sql: "SELECT n FROM stamps WHERE collection = ?", arguments: [collection.rawValue]) ?? 0
    }
}
