import { SqlExecutor } from "./storage/driver.js";

/**
 * The replica's schema, migration by migration, exactly as the Swift SDK makes it: the same statements, in the same
 * order, under the same identifiers, recorded in GRDB's own table `grdb_migrations`. A replica made by either SDK is
 * therefore the same file: the Swift SDK (and `syncapi client`) opens one made here without migrating it, and this
 * client opens one made there. Mirrors `Clients/SyncClient/Sources/SyncClient/Replica/Replica+Migrations.swift`;
 * a migration added there is added here, with the same identifier and text (a test compares `sqlite_master` with
 * a replica made by `syncapi client`).
 *
 * - `items`: one row per item: `server` (the server's JSON, compact with sorted keys: the base of a conflict), `etag`
 *   (its version, when known), `local` (an unsent edit), `localDeleted`, `sortKey` (the server's sort field) for
 *   ordered lists; `parent` is the parent's id for a child, '' otherwise.
 * - `meta`: the date of sync, per-list and per-parent `nomore`, the server's limits and model, the account.
 * - `queue`: unsent writes in order, one per item; `failed`: writes the server refused for good.
 * - `uploads`: media waiting to leave; `stamps`, `stampsBulk`: change counters per collection, kept by triggers;
 *   `conflicts`: the conflict journal; `heldCounts`: how many server items each list holds.
 */
export const migrations: readonly { id: string; sql: string }[] = [
    {
        id: "001-replica",
        sql: `CREATE TABLE items (
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
    op TEXT NOT NULL, body TEXT, status INTEGER NOT NULL, code TEXT NOT NULL, detail TEXT NOT NULL);`,
    },
    { id: "002-queue-sent", sql: "ALTER TABLE queue ADD COLUMN sent INTEGER NOT NULL DEFAULT 0" },
    {
        id: "003-uploads",
        sql: `CREATE TABLE uploads (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, sha256 TEXT NOT NULL UNIQUE, contentType TEXT NOT NULL,
    size INTEGER NOT NULL, status INTEGER, code TEXT)`,
    },
    {
        id: "004-stamps",
        sql: [
            "CREATE TABLE stamps (collection TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)",
            ...triggers(
                (event, row) => `CREATE TRIGGER items_stamp_${event.toLowerCase()} AFTER ${event} ON items
BEGIN UPDATE stamps SET n = n + 1 WHERE collection = ${row}.collection; END`
            ),
        ].join(";\n"),
    },
    {
        id: "005-stamps-bulk",
        sql: [
            "CREATE TABLE stampsBulk (collection TEXT PRIMARY KEY)",
            ...triggers(
                (event, row) => `DROP TRIGGER items_stamp_${event.toLowerCase()};
CREATE TRIGGER items_stamp_${event.toLowerCase()} AFTER ${event} ON items
WHEN NOT EXISTS (SELECT 1 FROM stampsBulk WHERE collection = ${row}.collection)
BEGIN
    UPDATE stamps SET n = n + 1 WHERE collection = ${row}.collection;
    INSERT INTO stampsBulk (collection)
        SELECT ${row}.collection WHERE EXISTS (SELECT 1 FROM stampsBulk WHERE collection = '*');
END`
            ),
        ].join(";\n"),
    },
    {
        id: "006-any-model",
        sql: [
            ...triggers(
                (event, row) => `DROP TRIGGER items_stamp_${event.toLowerCase()};
CREATE TRIGGER items_stamp_${event.toLowerCase()} AFTER ${event} ON items
WHEN NOT EXISTS (SELECT 1 FROM stampsBulk WHERE collection = ${row}.collection)
BEGIN
    INSERT INTO stamps (collection)
        SELECT ${row}.collection WHERE NOT EXISTS (SELECT 1 FROM stamps WHERE collection = ${row}.collection);
    UPDATE stamps SET n = n + 1 WHERE collection = ${row}.collection;
    INSERT INTO stampsBulk (collection)
        SELECT ${row}.collection WHERE EXISTS (SELECT 1 FROM stampsBulk WHERE collection = '*');
END`
            ),
            // A replica of SDK 0.2.0 synced the default model's collections from its date on.
            `INSERT OR REPLACE INTO meta (key, value)
SELECT 'collections.synced', 'accounts,comments,contacts,events,family,members,messages,places,settings,threads,wall'
WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'date')`,
        ].join(";\n"),
    },
    {
        id: "007-conflict-journal",
        sql: `CREATE TABLE conflicts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    atMs INTEGER NOT NULL,
    collection TEXT NOT NULL,
    parent TEXT NOT NULL,
    id TEXT NOT NULL,
    resolution TEXT NOT NULL,
    fields TEXT NOT NULL,
    base TEXT, local TEXT, server TEXT, result TEXT)`,
    },
    {
        id: "008-held-counts",
        sql: `CREATE TABLE heldCounts (collection TEXT PRIMARY KEY, n INTEGER NOT NULL);
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
    SELECT collection, COUNT(*) FROM items WHERE parent = '' AND server IS NOT NULL GROUP BY collection;`,
    },
];

function triggers(make: (event: string, row: string) => string): string[] {
    return [
        ["INSERT", "NEW"],
        ["UPDATE", "NEW"],
        ["DELETE", "OLD"],
    ].map(([event, row]) => make(event!, row!));
}

/** GRDB's record of the migrations applied (`DatabaseMigrator`), created as GRDB creates it. */
const migrationsTable = "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)";

/**
 * Brings the replica's schema forward: the migrations not yet recorded run, each with its record, in one transaction.
 * Answers the identifiers applied by a newer SDK that this client does not know (its tables are a superset: the
 * client still works, and says so in the log).
 */
export async function migrate(db: { transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> }): Promise<string[]> {
    return db.transaction(async (tx) => {
        await tx.exec(migrationsTable);
        const applied = new Set((await tx.query("SELECT identifier FROM grdb_migrations")).map((row) => String(row.identifier)));
        for (const migration of migrations) {
            if (applied.has(migration.id)) continue;
            await tx.exec(migration.sql);
            await tx.run("INSERT INTO grdb_migrations (identifier) VALUES (?)", [migration.id]);
        }
        const known = new Set(migrations.map((migration) => migration.id));
        return [...applied].filter((id) => !known.has(id)).sort();
    });
}
