import { SqlRow, SqlValue } from "./driver.js";
import { itemKey, ReplicaTables, TableRow } from "./replica-tables.js";

// The replica's SQL statements, each carried out on the in-memory tables exactly as SQLite carries it out on the
// schema of `schema.ts` (triggers included: the stamps and the held counts). Not an SQL engine: a table from the text
// of each statement the client sends (whitespace aside) to what it does. A statement not in the table is refused with
// its text, so a statement added to the client without its entry here fails the driver's tests at once
// (`test/storage/statements.test.ts` runs the client over this table and over node:sqlite side by side).

type Params = readonly SqlValue[];

/** What a statement answers: its rows (a query) and the rows it changed (a write), as SQLite counts them. */
export interface StatementOutcome {
    rows: SqlRow[];
    changes: number;
}

type Handler = (t: ReplicaTables, p: Params) => StatementOutcome;

const handlers = new Map<string, Handler>();

/** A statement's text as the table knows it: runs of whitespace made one space, no trailing semicolon. */
export function normalizeStatement(sql: string): string {
    return sql.replace(/\s+/g, " ").trim().replace(/;$/, "");
}

/** Whether the table knows the statement. */
export function knowsStatement(sql: string): boolean {
    return handlers.has(normalizeStatement(sql));
}

/** Runs one statement on the tables (the caller undoes it if it throws). */
export function runStatement(t: ReplicaTables, sql: string, params: Params = []): StatementOutcome {
    const handler = handlers.get(normalizeStatement(sql));
    if (!handler) throw new Error(`the replica's in-memory tables do not know this statement: ${normalizeStatement(sql)}`);
    return handler(t, params);
}

function on(sql: string | string[], handler: Handler): void {
    for (const text of Array.isArray(sql) ? sql : [sql]) handlers.set(normalizeStatement(text), handler);
}

const none: StatementOutcome = { rows: [], changes: 0 };
const rows = (list: SqlRow[]): StatementOutcome => ({ rows: list, changes: 0 });
const changed = (changes: number): StatementOutcome => ({ rows: [], changes });
const text = (value: SqlValue | undefined): string | null => (value === null || value === undefined ? null : String(value));

/** SQLite's BINARY collation: the order of the texts' UTF-8 bytes, which is their code points' order. */
export function compareText(a: string, b: string): number {
    const length = Math.min(a.length, b.length);
    for (let i = 0; i < length; i++) {
        let x = a.charCodeAt(i);
        let y = b.charCodeAt(i);
        if (x === y) continue;
        // UTF-16 puts the surrogates (code points past U+FFFF) below U+E000–U+FFFF; UTF-8 puts them above.
        if (x >= 0xd800 && y >= 0xd800) {
            x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
            y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
        }
        return x < y ? -1 : 1;
    }
    return a.length - b.length;
}

function likePattern(pattern: string): RegExp {
    const body = [...pattern].map((c) => (c === "%" ? "[\\s\\S]*" : c === "_" ? "[\\s\\S]" : c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("");
    return new RegExp(`^${body}$`, "i");
}

// MARK: - items and its triggers (004–008)

function stamp(t: ReplicaTables, collection: string): void {
    if (t.stampsBulk.get(collection)) return;
    const n = Number(t.stamps.get(collection)?.n ?? 0);
    t.stamps.set({ collection, n: n + 1 });
    if (t.stampsBulk.get("*")) t.stampsBulk.set({ collection });
}

function held(t: ReplicaTables, collection: string, delta: number): void {
    const count = t.heldCounts.get(collection);
    if (count && delta !== 0) t.heldCounts.set({ collection, n: Number(count.n) + delta });
}

function item(t: ReplicaTables, collection: SqlValue | undefined, parent: SqlValue | undefined, id: SqlValue | undefined): TableRow | undefined {
    return t.items.get(itemKey(collection, parent, id));
}

/** The items of one list (one parent's children when `parent` is given), in no order. */
function list(t: ReplicaTables, collection: SqlValue | undefined, parent?: SqlValue): TableRow[] {
    const parents = t.itemsByList.get(String(collection));
    if (!parents) return [];
    if (parent !== undefined) return [...(parents.get(String(parent))?.values() ?? [])];
    const all: TableRow[] = [];
    for (const ids of parents.values()) for (const row of ids.values()) all.push(row);
    return all;
}

function insertItem(t: ReplicaTables, row: TableRow): void {
    const full: TableRow = { server: null, etag: null, local: null, localDeleted: 0, sortKey: "", ...row };
    t.items.set(full);
    stamp(t, String(full.collection));
    if (full.parent === "" && full.server !== null) held(t, String(full.collection), 1);
}

/** An UPDATE of one row; `ofServer`: the statement sets `server` (the trigger `AFTER UPDATE OF server`). */
function updateItem(t: ReplicaTables, old: TableRow, changes: TableRow, ofServer: boolean): void {
    const row = { ...old, ...changes };
    t.items.set(row);
    stamp(t, String(row.collection));
    if (ofServer && row.parent === "" && (old.server === null) !== (row.server === null)) {
        held(t, String(row.collection), (row.server !== null ? 1 : 0) - (old.server !== null ? 1 : 0));
    }
}

function deleteItem(t: ReplicaTables, old: TableRow): void {
    t.items.remove(t.items.keyOf(old));
    stamp(t, String(old.collection));
    if (old.parent === "" && old.server !== null) held(t, String(old.collection), -1);
}

const unedited = (row: TableRow): boolean => row.local === null && Number(row.localDeleted) === 0;

on(
    `INSERT INTO items (collection, parent, id, server, etag, sortKey) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
    etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
    sortKey = excluded.sortKey`,
    (t, [collection, parent, id, server, etag, sortKey]) => {
        const old = item(t, collection, parent, id);
        if (!old) {
            insertItem(t, { collection: text(collection), parent: text(parent), id: text(id), server: text(server), etag: text(etag), sortKey: text(sortKey) });
        } else {
            const same = old.server !== null && server !== null && server !== undefined && old.server === String(server);
            updateItem(t, old, { server: text(server), etag: text(etag) ?? (same ? old.etag : null), sortKey: text(sortKey) }, true);
        }
        return changed(1);
    }
);

on(
    `INSERT INTO items (collection, parent, id, local, sortKey) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET local = excluded.local, localDeleted = 0,
    sortKey = CASE WHEN items.server IS NULL THEN excluded.sortKey ELSE items.sortKey END`,
    (t, [collection, parent, id, local, sortKey]) => {
        const old = item(t, collection, parent, id);
        if (!old) insertItem(t, { collection: text(collection), parent: text(parent), id: text(id), local: text(local), sortKey: text(sortKey) });
        else updateItem(t, old, { local: text(local), localDeleted: 0, sortKey: old.server === null ? text(sortKey) : old.sortKey }, false);
        return changed(1);
    }
);

on(
    `INSERT INTO items (collection, parent, id, localDeleted) VALUES (?, ?, ?, 1)
ON CONFLICT (collection, parent, id) DO UPDATE SET local = NULL, localDeleted = 1`,
    (t, [collection, parent, id]) => {
        const old = item(t, collection, parent, id);
        if (!old) insertItem(t, { collection: text(collection), parent: text(parent), id: text(id), localDeleted: 1 });
        else updateItem(t, old, { local: null, localDeleted: 1 }, false);
        return changed(1);
    }
);

/** A statement on one item: its row when the condition holds. */
function one(condition: (row: TableRow) => boolean = () => true) {
    return (t: ReplicaTables, [collection, parent, id]: Params): TableRow | undefined => {
        const row = item(t, collection, parent, id);
        return row && condition(row) ? row : undefined;
    };
}

function deleting(find: (t: ReplicaTables, p: Params) => TableRow | undefined): Handler {
    return (t, p) => {
        const row = find(t, p);
        if (!row) return none;
        deleteItem(t, row);
        return changed(1);
    };
}

on("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ?", deleting(one()));
on("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND local IS NULL AND localDeleted = 0", deleting(one(unedited)));
on("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND server IS NULL", deleting(one((row) => row.server === null)));

on("UPDATE items SET server = NULL, etag = NULL WHERE collection = ? AND parent = ? AND id = ?", (t, p) => {
    const row = one()(t, p);
    if (!row) return none;
    updateItem(t, row, { server: null, etag: null }, true);
    return changed(1);
});
on("UPDATE items SET local = ?, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?", (t, [local, ...key]) => {
    const row = one()(t, key);
    if (!row) return none;
    updateItem(t, row, { local: text(local), localDeleted: 0 }, false);
    return changed(1);
});
on("UPDATE items SET local = NULL, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?", (t, p) => {
    const row = one()(t, p);
    if (!row) return none;
    updateItem(t, row, { local: null, localDeleted: 0 }, false);
    return changed(1);
});

// A whole list, or one parent's children (`clearServer`).
for (const [scope, take] of [
    ["", (p: Params) => [p[0]] as const],
    [" AND parent = ?", (p: Params) => [p[0], p[1]] as const],
] as const) {
    on(`DELETE FROM items WHERE collection = ?${scope} AND local IS NULL AND localDeleted = 0`, (t, p) => {
        const [collection, parent] = take(p);
        const doomed = list(t, collection, parent).filter(unedited);
        for (const row of doomed) deleteItem(t, row);
        return changed(doomed.length);
    });
    on(`UPDATE items SET server = NULL, etag = NULL WHERE collection = ?${scope}`, (t, p) => {
        const [collection, parent] = take(p);
        const matched = list(t, collection, parent);
        for (const row of matched) updateItem(t, row, { server: null, etag: null }, true);
        return changed(matched.length);
    });
}

on("DELETE FROM items", (t) => {
    const all = [...t.items.rows.values()];
    for (const row of all) deleteItem(t, row);
    return changed(all.length);
});

on(
    `SELECT (SELECT COUNT(*) FROM items WHERE collection = ? AND parent = '')
    - (SELECT COUNT(*) FROM items WHERE collection = ? AND parent = '' AND server IS NULL) AS n`,
    (t, [collection]) => rows([{ n: list(t, collection, "").filter((row) => row.server !== null).length }])
);

const visible = (row: TableRow): boolean => Number(row.localDeleted) === 0 && (row.local ?? row.server) !== null;
const byId = (a: TableRow, b: TableRow): number => compareText(String(a.id), String(b.id));
const bySortKeyDesc = (a: TableRow, b: TableRow): number => compareText(String(b.sortKey), String(a.sortKey));
const orders: [string, (a: TableRow, b: TableRow) => number][] = [
    ["sortKey DESC, id DESC", (a, b) => bySortKeyDesc(a, b) || byId(b, a)],
    ["id", byId],
    // Rows whose sortKey is '' by id ascending (the CASE), the others by id descending.
    ["sortKey DESC, CASE WHEN sortKey = '' THEN id END, id DESC", (a, b) => bySortKeyDesc(a, b) || (a.sortKey === "" ? byId(a, b) : byId(b, a))],
];
for (const [order, compare] of orders) {
    on(
        `SELECT COALESCE(local, server) AS text FROM items
WHERE collection = ? AND parent = ? AND localDeleted = 0 AND COALESCE(local, server) IS NOT NULL
ORDER BY ${order}`,
        (t, [collection, parent]) => rows(list(t, collection, parent).filter(visible).sort(compare).map((row) => ({ text: row.local ?? row.server })))
    );
}

on("SELECT COALESCE(local, server) AS text FROM items WHERE collection = ? AND parent = ? AND id = ? AND localDeleted = 0", (t, p) => {
    const row = one((candidate) => Number(candidate.localDeleted) === 0)(t, p);
    return rows(row ? [{ text: row.local ?? row.server }] : []);
});

on("SELECT id FROM items WHERE collection = ? AND parent = ? AND server IS NOT NULL ORDER BY sortKey ASC, id ASC LIMIT 1", (t, [collection, parent]) => {
    let first: TableRow | undefined;
    for (const row of list(t, collection, parent)) {
        if (row.server === null) continue;
        if (!first || compareText(String(row.sortKey), String(first.sortKey)) < 0 || (row.sortKey === first.sortKey && byId(row, first) < 0)) first = row;
    }
    return rows(first ? [{ id: first.id }] : []);
});

on("SELECT id, server FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL", (t, [collection]) =>
    rows(list(t, collection, "").filter((row) => row.server !== null).sort(byId).map((row) => ({ id: row.id, server: row.server })))
);

/** `SELECT <columns> FROM items WHERE collection = ? AND parent = ? AND id = ?`. */
function itemColumns(columns: string, pick: (row: TableRow) => SqlRow): void {
    on(`SELECT ${columns} FROM items WHERE collection = ? AND parent = ? AND id = ?`, (t, p) => {
        const row = one()(t, p);
        return rows(row ? [pick(row)] : []);
    });
}
itemColumns("server, local", (row) => ({ server: row.server ?? null, local: row.local ?? null }));
itemColumns("server, etag", (row) => ({ server: row.server ?? null, etag: row.etag ?? null }));
itemColumns("server IS NOT NULL AS onServer", (row) => ({ onServer: row.server !== null ? 1 : 0 }));

// MARK: - meta, heldCounts, stamps

on("SELECT value FROM meta WHERE key = ?", (t, [key]) => {
    const row = t.meta.get(String(key));
    return rows(row ? [{ value: row.value ?? null }] : []);
});
on("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (t, [key, value]) => {
    if (value === null || value === undefined) throw new Error("NOT NULL constraint failed: meta.value");
    t.meta.set({ key: String(key), value: String(value) });
    return changed(1);
});
function deleteMeta(keep: (key: string, p: Params) => boolean): Handler {
    return (t, p) => {
        const doomed = [...t.meta.rows.keys()].filter((key) => !keep(key, p));
        for (const key of doomed) t.meta.remove(key);
        return changed(doomed.length);
    };
}
on("DELETE FROM meta WHERE key = ?", deleteMeta((key, [which]) => key !== String(which)));
on("DELETE FROM meta WHERE key LIKE ?", deleteMeta((key, [pattern]) => !likePattern(String(pattern)).test(key)));
on("DELETE FROM meta WHERE key NOT IN (?, ?)", deleteMeta((key, p) => p.some((kept) => String(kept) === key)));
on("DELETE FROM meta WHERE key != ?", deleteMeta((key, [kept]) => key === String(kept)));

on("SELECT n FROM heldCounts WHERE collection = ?", (t, [collection]) => {
    const row = t.heldCounts.get(String(collection));
    return rows(row ? [{ n: row.n ?? 0 }] : []);
});
on("INSERT INTO heldCounts (collection, n) VALUES (?, ?)", (t, [collection, n]) => {
    if (t.heldCounts.get(String(collection))) throw new Error("UNIQUE constraint failed: heldCounts.collection");
    t.heldCounts.set({ collection: String(collection), n: Number(n) });
    return changed(1);
});
on("DELETE FROM heldCounts WHERE collection = ?", (t, [collection]) => changed(t.heldCounts.remove(String(collection)) ? 1 : 0));
on("DELETE FROM heldCounts", (t) => clear(t.heldCounts));

on("SELECT n FROM stamps WHERE collection = ?", (t, [collection]) => {
    const row = t.stamps.get(String(collection));
    return rows(row ? [{ n: row.n ?? 0 }] : []);
});
on("INSERT OR IGNORE INTO stampsBulk (collection) VALUES ('*')", (t) => {
    if (t.stampsBulk.get("*")) return none;
    t.stampsBulk.set({ collection: "*" });
    return changed(1);
});
on("DELETE FROM stampsBulk", (t) => clear(t.stampsBulk));

function clear(store: ReplicaTables["meta"]): StatementOutcome {
    const keys = [...store.rows.keys()];
    for (const key of keys) store.remove(key);
    return changed(keys.length);
}

// MARK: - queue, failed, conflicts, uploads, migrations

const bySeq = (a: TableRow, b: TableRow): number => Number(a.seq) - Number(b.seq);
const queued = (t: ReplicaTables, [collection, parent, id]: Params): TableRow | undefined => t.queueByItem.get(itemKey(collection, parent, id));

on(
    `INSERT INTO queue (collection, parent, id, op, body) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET op = excluded.op, body = excluded.body, rev = queue.rev + 1`,
    (t, [collection, parent, id, op, body]) => {
        const old = queued(t, [collection, parent, id]);
        // SQLite takes the next AUTOINCREMENT value before it meets the conflict: the sequence moves either way.
        const seq = t.nextSeq("queue");
        if (old) t.queue.set({ ...old, op: text(op), body: text(body), rev: Number(old.rev) + 1 });
        else t.queue.set({ seq, collection: text(collection), parent: text(parent), id: text(id), op: text(op), body: text(body), rev: 1, sent: 0 });
        return changed(1);
    }
);
for (const column of ["op, body", "sent", "rev"]) {
    on(`SELECT ${column} FROM queue WHERE collection = ? AND parent = ? AND id = ?`, (t, p) => {
        const row = queued(t, p);
        return rows(row ? [Object.fromEntries(column.split(", ").map((name) => [name, row[name] ?? null]))] : []);
    });
}
on("DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", (t, p) => {
    const row = queued(t, p);
    return changed(row && t.queue.remove(t.queue.keyOf(row)) ? 1 : 0);
});
on("DELETE FROM queue", (t) => clear(t.queue));
on("SELECT 1 AS one FROM uploads WHERE status IS NULL LIMIT 1", (t) => rows(waiting(t).length > 0 ? [{ one: 1 }] : []));
on("SELECT 1 AS one FROM queue LIMIT 1", (t) => rows(t.queue.rows.size > 0 ? [{ one: 1 }] : []));
on("SELECT 1 AS one FROM queue UNION ALL SELECT 1 FROM uploads WHERE status IS NULL LIMIT 1", (t) => {
    const any = t.queue.rows.size > 0 || [...t.uploads.rows.values()].some((row) => row.status === null);
    return rows(any ? [{ one: 1 }] : []);
});
on(
    `SELECT (SELECT COUNT(*) FROM queue) + (SELECT COUNT(*) FROM uploads WHERE status IS NULL) AS pending,
(SELECT COUNT(*) FROM failed) + (SELECT COUNT(*) FROM uploads WHERE status IS NOT NULL) AS failed`,
    (t) => {
        const uploads = [...t.uploads.rows.values()];
        const waitingUploads = uploads.filter((row) => row.status === null).length;
        return rows([{ pending: t.queue.rows.size + waitingUploads, failed: t.failed.rows.size + uploads.length - waitingUploads }]);
    }
);
on("SELECT COUNT(*) AS n FROM queue", (t) => rows([{ n: t.queue.rows.size }]));
on("SELECT COUNT(*) AS n FROM failed", (t) => rows([{ n: t.failed.rows.size }]));
on("SELECT COUNT(*) AS n FROM uploads WHERE status IS NULL", (t) => rows([{ n: waiting(t).length }]));
on("SELECT COUNT(*) AS n FROM uploads WHERE status IS NOT NULL", (t) => rows([{ n: t.uploads.rows.size - waiting(t).length }]));
on("UPDATE queue SET sent = 1 WHERE sent = 0", (t) => {
    const unsent = [...t.queue.rows.values()].filter((row) => Number(row.sent) === 0);
    for (const row of unsent) t.queue.set({ ...row, sent: 1 });
    return changed(unsent.length);
});
on("SELECT collection, parent, id, op, body, rev FROM queue ORDER BY seq", (t) =>
    rows([...t.queue.rows.values()].sort(bySeq).map(({ collection, parent, id, op, body, rev }) => ({ collection, parent, id, op, body, rev })) as SqlRow[])
);

const failedColumns = ["collection", "parent", "id", "op", "body", "status", "code", "detail"];
on(`INSERT INTO failed (${failedColumns.join(", ")}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, (t, p) => {
    const row: TableRow = { seq: t.nextSeq("failed") };
    failedColumns.forEach((column, index) => (row[column] = p[index] ?? null));
    t.failed.set(row);
    return changed(1);
});
on(`SELECT ${failedColumns.join(", ")} FROM failed ORDER BY seq`, (t) =>
    rows([...t.failed.rows.values()].sort(bySeq).map((row) => Object.fromEntries(failedColumns.map((column) => [column, row[column] ?? null]))))
);
on("DELETE FROM failed", (t) => clear(t.failed));

const conflictColumns = ["atMs", "collection", "parent", "id", "resolution", "fields", "base", "local", "server", "result"];
on(`INSERT INTO conflicts (${conflictColumns.join(", ")}) VALUES (${conflictColumns.map(() => "?").join(", ")})`, (t, p) => {
    const row: TableRow = { seq: t.nextSeq("conflicts") };
    conflictColumns.forEach((column, index) => (row[column] = p[index] ?? null));
    t.conflicts.set(row);
    return changed(1);
});
on("SELECT * FROM conflicts ORDER BY seq", (t) =>
    rows([...t.conflicts.rows.values()].sort(bySeq).map((row) => ({ seq: row.seq!, ...Object.fromEntries(conflictColumns.map((column) => [column, row[column] ?? null])) })))
);
on("SELECT seq, atMs FROM conflicts ORDER BY seq DESC LIMIT 1", (t) => {
    const last = [...t.conflicts.rows.values()].sort(bySeq).pop();
    return rows(last ? [{ seq: last.seq ?? null, atMs: last.atMs ?? null }] : []);
});
on("DELETE FROM conflicts", (t) => clear(t.conflicts));

const waiting = (t: ReplicaTables): TableRow[] => [...t.uploads.rows.values()].filter((row) => row.status === null).sort(bySeq);
on("INSERT INTO uploads (sha256, contentType, size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING", (t, [sha256, contentType, size]) => {
    const seq = t.nextSeq("uploads");
    if (t.uploadsBySha.has(String(sha256))) return none;
    t.uploads.set({ seq, sha256: text(sha256), contentType: text(contentType), size: Number(size), status: null, code: null });
    return changed(1);
});
on("SELECT sha256, contentType, status, code FROM uploads WHERE status IS NOT NULL ORDER BY seq", (t) =>
    rows(
        [...t.uploads.rows.values()]
            .filter((row) => row.status !== null)
            .sort(bySeq)
            .map(({ sha256, contentType, status, code }) => ({ sha256, contentType, status, code }) as SqlRow)
    )
);
on("SELECT sha256 FROM uploads WHERE status IS NULL ORDER BY seq", (t) => rows(waiting(t).map((row) => ({ sha256: row.sha256 ?? null }))));
on("SELECT sha256, contentType FROM uploads WHERE status IS NULL ORDER BY seq", (t) =>
    rows(waiting(t).map((row) => ({ sha256: row.sha256 ?? null, contentType: row.contentType ?? null })))
);
on("SELECT sha256 FROM uploads", (t) => rows([...t.uploads.rows.values()].sort(bySeq).map((row) => ({ sha256: row.sha256 ?? null }))));
function updateUpload(t: ReplicaTables, sha256: SqlValue | undefined, status: SqlValue, code: SqlValue): StatementOutcome {
    const row = t.uploadsBySha.get(String(sha256));
    if (!row) return none;
    t.uploads.set({ ...row, status, code });
    return changed(1);
}
on("UPDATE uploads SET status = 0, code = 'missing_file' WHERE sha256 = ?", (t, [sha256]) => updateUpload(t, sha256, 0, "missing_file"));
on("UPDATE uploads SET status = ?, code = ? WHERE sha256 = ?", (t, [status, code, sha256]) => updateUpload(t, sha256, status ?? null, code ?? null));
on("DELETE FROM uploads WHERE sha256 = ?", (t, [sha256]) => {
    const row = t.uploadsBySha.get(String(sha256));
    return changed(row && t.uploads.remove(t.uploads.keyOf(row)) ? 1 : 0);
});
on("DELETE FROM uploads", (t) => clear(t.uploads));

on("SELECT identifier FROM grdb_migrations", (t) => rows([...t.migrations.rows.values()].map((row) => ({ identifier: row.identifier ?? null }))));
on("INSERT INTO grdb_migrations (identifier) VALUES (?)", (t, [identifier]) => {
    if (t.migrations.get(String(identifier))) throw new Error("UNIQUE constraint failed: grdb_migrations.identifier");
    t.migrations.set({ identifier: String(identifier) });
    return changed(1);
});
