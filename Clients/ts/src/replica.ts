import { SyncClientError } from "./errors.js";
import { canonicalText, isObject, JsonObject, JsonValue, parseObject } from "./json.js";
import { childCollection, ModelCollection, ServerModel, sortField } from "./model.js";
import { SqlExecutor, SqlRow } from "./storage/driver.js";

// The rules of protocol §3–§5 applied to the replica, and its queue of writes: the Swift SDK's `Replica` extensions
// (`Replica+Apply.swift`, `Replica+Store.swift`, `Replica+Read.swift`, `Replica+Meta.swift`, `Queue/Replica+Queue.swift`),
// statement for statement, so both SDKs leave the same rows for the same answers. Every function runs on the executor
// it is given: inside the one transaction of a sync, or of a local write with its queue entry.

/** Keys of the `meta` table (the Swift SDK's `MetaKey`). */
export const MetaKey = {
    date: "date",
    limits: "limits.json",
    /** The account whose data the replica holds. */
    account: "account",
    /** The server's model, its JSON as served. */
    model: "model.json",
    /** The collections the stored date covers, comma-separated. */
    synced: "collections.synced",
    /** Whether the replica holds the whole list of a paginated collection, or all children of one parent. */
    nomore(list: string, parent?: string): string {
        return parent === undefined ? `nomore.${list}` : `nomore.${list}.${parent}`;
    },
} as const;

export async function getMeta(tx: SqlExecutor, key: string): Promise<string | undefined> {
    const rows = await tx.query("SELECT value FROM meta WHERE key = ?", [key]);
    const value = rows[0]?.value;
    return typeof value === "string" ? value : undefined;
}

export async function setMeta(tx: SqlExecutor, key: string, value: string | undefined): Promise<void> {
    if (value === undefined) {
        await tx.run("DELETE FROM meta WHERE key = ?", [key]);
    } else {
        await tx.run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value]);
    }
}

export async function getFlag(tx: SqlExecutor, key: string): Promise<boolean> {
    return (await getMeta(tx, key)) === "1";
}

async function setFlag(tx: SqlExecutor, key: string, value: boolean): Promise<void> {
    await setMeta(tx, key, value ? "1" : "0");
}

// MARK: - Answers

/** A full-list answer (§3). */
export interface ListAnswer {
    date: string;
    sync: boolean;
    updated: JsonObject[];
    deleted: string[];
}

/** A paginated answer (§4). */
export interface PagedAnswer extends ListAnswer {
    crop: boolean;
    nomore: boolean;
}

/** A page of `GET /threads` or of a parent's children (`{"items", "nomore"}`). */
export interface PageAnswer {
    items: JsonObject[];
    nomore: boolean;
}

export function objects(value: JsonValue | undefined, what: string): JsonObject[] {
    if (!Array.isArray(value) || !value.every(isObject)) throw SyncClientError.invalidAnswer(`${what} is not a list of objects`);
    return value as JsonObject[];
}

export function strings(value: JsonValue | undefined, what: string): string[] {
    if (!Array.isArray(value) || !value.every((id) => typeof id === "string")) {
        throw SyncClientError.invalidAnswer(`${what} is not a list of ids`);
    }
    return value as string[];
}

export function parseListAnswer(body: JsonValue | undefined, name: string): ListAnswer {
    if (!isObject(body) || typeof body.date !== "string" || typeof body.sync !== "boolean") {
        throw SyncClientError.invalidAnswer(`answer ${name} needs date, sync, updated and deleted`);
    }
    return { date: body.date, sync: body.sync, updated: objects(body.updated, `${name}.updated`), deleted: strings(body.deleted, `${name}.deleted`) };
}

export function parsePagedAnswer(body: JsonValue | undefined, name: string): PagedAnswer {
    const list = parseListAnswer(body, name);
    const object = body as JsonObject;
    if (typeof object.crop !== "boolean" || typeof object.nomore !== "boolean") {
        throw SyncClientError.invalidAnswer(`answer ${name} needs crop and nomore`);
    }
    return { ...list, crop: object.crop, nomore: object.nomore };
}

export function parsePageAnswer(body: JsonValue | undefined, name: string): PageAnswer {
    if (!isObject(body) || typeof body.nomore !== "boolean") throw SyncClientError.invalidAnswer(`page of ${name} needs items and nomore`);
    return { items: objects(body.items, `${name}.items`), nomore: body.nomore };
}

// MARK: - Server versions

/** The sort key of an item: its sort field (RFC 3339 UTC sorts as text); "~" when absent (first, as the server will put it); "" unsorted. */
export function sortKey(collection: ModelCollection, item: JsonObject | null | undefined): string {
    const field = sortField(collection);
    if (field === undefined) return "";
    const value = item?.[field];
    return typeof value === "string" ? value : "~";
}

/** An item as the replica stores it: without the children and `nomore` a paginated item carries. */
export function storedItem(collection: ModelCollection, item: JsonObject): JsonObject {
    const copy: JsonObject = { ...item };
    if (collection.children) delete copy[collection.children];
    delete copy.nomore;
    return copy;
}

interface ServerRow {
    id: string;
    text: string;
    sortKey: string;
}

function serverRow(collection: ModelCollection, item: JsonObject): ServerRow | undefined {
    if (typeof item.id !== "string") return undefined;
    const stored = storedItem(collection, item);
    return { id: item.id, text: canonicalText(stored), sortKey: sortKey(collection, stored) };
}

/** Stores the server's version of an item, keeping an unsent local edit on top of it (and its ETag while the text is the same). */
export async function storeServer(
    tx: SqlExecutor,
    collection: ModelCollection,
    parent: string,
    item: JsonObject,
    etag?: string | null
): Promise<void> {
    const row = serverRow(collection, item);
    if (!row) return;
    await tx.run(
        `INSERT INTO items (collection, parent, id, server, etag, sortKey) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
    etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
    sortKey = excluded.sortKey`,
        [collection.name, parent, row.id, row.text, etag ?? null, row.sortKey]
    );
}

/** The server deleted an item: it goes, with its children, unless an unsent local edit keeps it. */
export async function removeServer(tx: SqlExecutor, model: ServerModel, collection: ModelCollection, parent: string, id: string): Promise<void> {
    await tx.run("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND local IS NULL AND localDeleted = 0", [
        collection.name,
        parent,
        id,
    ]);
    await tx.run("UPDATE items SET server = NULL, etag = NULL WHERE collection = ? AND parent = ? AND id = ?", [collection.name, parent, id]);
    const child = childCollection(model, collection);
    if (child) {
        await clearServer(tx, model, child, id);
        await setMeta(tx, MetaKey.nomore(child.name, id), undefined);
    }
}

/**
 * Forgets the server's versions of a whole list (a `sync: false` or `crop` answer replaces it), or of one parent's
 * children, keeping rows that carry unsent edits. A paginated list's children go with it.
 */
export async function clearServer(tx: SqlExecutor, model: ServerModel, collection: ModelCollection, parent?: string): Promise<void> {
    const scope = parent === undefined ? "" : " AND parent = ?";
    const args = parent === undefined ? [collection.name] : [collection.name, parent];
    const child = childCollection(model, collection);
    if (child && parent === undefined) {
        await tx.run("DELETE FROM items WHERE collection = ? AND local IS NULL AND localDeleted = 0", [child.name]);
        await tx.run("UPDATE items SET server = NULL, etag = NULL WHERE collection = ?", [child.name]);
        await tx.run("DELETE FROM meta WHERE key LIKE ?", [`nomore.${child.name}.%`]);
    }
    if (parent === undefined || parent === "") {
        // Its held count goes with it, counted again at the sync's end (`recountHeld`).
        await tx.run("DELETE FROM heldCounts WHERE collection = ?", [collection.name]);
    }
    await tx.run(`DELETE FROM items WHERE collection = ?${scope} AND local IS NULL AND localDeleted = 0`, args);
    await tx.run(`UPDATE items SET server = NULL, etag = NULL WHERE collection = ?${scope}`, args);
}

/** A list answer (§3): `sync: false` replaces the list; then deletes, then upserts. */
export async function applyList(tx: SqlExecutor, model: ServerModel, collection: ModelCollection, answer: ListAnswer): Promise<void> {
    if (!answer.sync) await clearServer(tx, model, collection);
    for (const id of answer.deleted) await removeServer(tx, model, collection, "", id);
    for (const item of answer.updated) await storeServer(tx, collection, "", item);
}

/**
 * A paginated answer (§4): `sync: false` or `crop: true` keeps only the fresh page (a crop never leaves a hole: the
 * list is the top of the server's, complete down to its last item); each parent's children are replaced by the ones
 * it carries, with their `nomore`; the list's `nomore` stored.
 */
export async function applyPaged(tx: SqlExecutor, model: ServerModel, collection: ModelCollection, answer: PagedAnswer): Promise<void> {
    if (!answer.sync || answer.crop) await clearServer(tx, model, collection);
    for (const id of answer.deleted) await removeServer(tx, model, collection, "", id);
    for (const item of answer.updated) await storeParent(tx, model, collection, item);
    await setFlag(tx, MetaKey.nomore(collection.name), answer.nomore);
}

/** Stores an item of a paginated list and replaces its children with the newest ones it carries. */
async function storeParent(tx: SqlExecutor, model: ServerModel, collection: ModelCollection, item: JsonObject): Promise<void> {
    await storeServer(tx, collection, "", item);
    const child = childCollection(model, collection);
    const children = child ? item[child.name] : undefined;
    if (typeof item.id !== "string" || !child || !Array.isArray(children)) return;
    await clearServer(tx, model, child, item.id);
    for (const entry of children) {
        if (isObject(entry)) await storeServer(tx, child, item.id, entry);
    }
    await setFlag(tx, MetaKey.nomore(child.name, item.id), item.nomore === true);
}

/** A page of `loadMore`, appended below what the replica holds of the list (or of one parent's children). */
export async function applyPage(tx: SqlExecutor, model: ServerModel, list: ModelCollection, parent: string | undefined, page: PageAnswer): Promise<void> {
    for (const item of page.items) {
        if (list.kind === "child") {
            await storeServer(tx, list, parent ?? "", item);
        } else {
            await storeParent(tx, model, list, item);
        }
    }
    await setFlag(tx, MetaKey.nomore(list.name, parent), page.nomore);
}

/**
 * A bundle answer (§5, as `familysync`): `{"date", "sync"}`, each singleton under its name (null: unchanged), each
 * list as `{"updated", "deleted"}`; `sync: false` replaces all of them.
 */
export async function applyBundle(
    tx: SqlExecutor,
    model: ServerModel,
    members: ModelCollection[],
    body: JsonValue | undefined,
    name: string
): Promise<{ date: string; sync: boolean }> {
    if (!isObject(body) || typeof body.date !== "string" || typeof body.sync !== "boolean") {
        throw SyncClientError.invalidAnswer(`answer ${name} needs date and sync`);
    }
    if (!body.sync) {
        for (const collection of members) await clearServer(tx, model, collection);
    }
    for (const collection of members) {
        const value = body[collection.name] ?? null;
        if (collection.kind === "singleton") {
            if (!isObject(value)) continue;
            await clearServer(tx, model, collection);
            await storeServer(tx, collection, "", value);
            continue;
        }
        if (value === null) continue;
        if (!isObject(value)) throw SyncClientError.invalidAnswer(`${collection.name} is not {"updated", "deleted"}`);
        for (const id of strings(value.deleted ?? [], `${collection.name}.deleted`)) await removeServer(tx, model, collection, "", id);
        for (const item of objects(value.updated ?? [], `${collection.name}.updated`)) await storeServer(tx, collection, "", item);
    }
    return { date: body.date, sync: body.sync };
}

/** Starts a bulk apply inside the caller's transaction: each collection's stamp moves once, at its first row. */
export async function beginBulkStamps(tx: SqlExecutor): Promise<void> {
    await tx.run("INSERT OR IGNORE INTO stampsBulk (collection) VALUES ('*')");
}

export async function endBulkStamps(tx: SqlExecutor): Promise<void> {
    await tx.run("DELETE FROM stampsBulk");
}

/** Counts again, and keeps, each list's count that a clear dropped (at the end of a sync's transaction). */
export async function recountHeld(tx: SqlExecutor, collections: string[]): Promise<void> {
    for (const collection of collections) {
        if ((await keptCount(tx, collection)) !== undefined) continue;
        await tx.run("INSERT INTO heldCounts (collection, n) VALUES (?, ?)", [collection, await countHeld(tx, collection)]);
    }
}

async function keptCount(tx: SqlExecutor, collection: string): Promise<number | undefined> {
    const rows = await tx.query("SELECT n FROM heldCounts WHERE collection = ?", [collection]);
    return rows[0] === undefined ? undefined : Number(rows[0].n);
}

async function countHeld(tx: SqlExecutor, collection: string): Promise<number> {
    const rows = await tx.query(
        `SELECT (SELECT COUNT(*) FROM items WHERE collection = ? AND parent = '')
    - (SELECT COUNT(*) FROM items WHERE collection = ? AND parent = '' AND server IS NULL) AS n`,
        [collection, collection]
    );
    return Number(rows[0]?.n ?? 0);
}

/** How many server items of a top-level list the replica holds. */
export async function serverCount(tx: SqlExecutor, collection: string): Promise<number> {
    return (await keptCount(tx, collection)) ?? (await countHeld(tx, collection));
}

/**
 * Erases every item, the queue, the conflict journal, the failed list (unless `keepingFailed`), the sync state and
 * the server's limits (logout, another account); the model stays.
 */
export async function eraseData(tx: SqlExecutor, keepingFailed: boolean): Promise<void> {
    await tx.exec("DELETE FROM heldCounts; DELETE FROM items; DELETE FROM queue; DELETE FROM conflicts");
    if (keepingFailed) {
        await tx.run("DELETE FROM meta WHERE key NOT IN (?, ?)", [MetaKey.model, MetaKey.account]);
    } else {
        await tx.run("DELETE FROM failed");
        await tx.run("DELETE FROM meta WHERE key != ?", [MetaKey.model]);
    }
}

// MARK: - Reads

/**
 * The visible items' texts (the server's, unsent edits on top, locally deleted ones hidden): newest first then by id
 * descending for a sorted collection (`sorted`), by id otherwise; undefined `sorted` lets the rows tell.
 */
export async function visibleTexts(tx: SqlExecutor, collection: string, parent: string | undefined, sorted: boolean | undefined): Promise<string[]> {
    const order =
        sorted === true ? "sortKey DESC, id DESC" : sorted === false ? "id" : "sortKey DESC, CASE WHEN sortKey = '' THEN id END, id DESC";
    const rows = await tx.query(
        `SELECT COALESCE(local, server) AS text FROM items
WHERE collection = ? AND parent = ? AND localDeleted = 0 AND COALESCE(local, server) IS NOT NULL
ORDER BY ${order}`,
        [collection, parent ?? ""]
    );
    return rows.map((row) => String(row.text));
}

export async function visibleItem(tx: SqlExecutor, collection: string, id: string, parent: string | undefined): Promise<JsonObject | undefined> {
    const rows = await tx.query("SELECT COALESCE(local, server) AS text FROM items WHERE collection = ? AND parent = ? AND id = ? AND localDeleted = 0", [
        collection,
        parent ?? "",
        id,
    ]);
    const text = rows[0]?.text;
    return typeof text === "string" ? (parseObject(text) ?? undefined) : undefined;
}

/** The last item held of a server-ordered list (the `lastId` of §4), from the server's versions only. */
export async function lastServerId(tx: SqlExecutor, collection: string, parent = ""): Promise<string | undefined> {
    const rows = await tx.query(
        `SELECT id FROM items WHERE collection = ? AND parent = ? AND server IS NOT NULL
ORDER BY sortKey ASC, id ASC LIMIT 1`,
        [collection, parent]
    );
    const id = rows[0]?.id;
    return typeof id === "string" ? id : undefined;
}

// MARK: - The queue

/** What a queued write does on the server. */
export type OperationKind = "put" | "patch" | "delete";

/** A write waiting to reach the server: one per item at most (later edits fold into it). */
export interface PendingOperation {
    collection: string;
    parent: string | undefined;
    id: string;
    kind: OperationKind;
    /** The state to send for a `put`, the merge patch for a `patch`. */
    body: JsonObject | undefined;
    /** Bumped by every edit folded in: an answer clears the entry only if no edit came after the push began. */
    revision: number;
}

/** A write the server refused for good: kept for the app to inspect, never retried, never blocking the queue. */
export interface FailedOperation {
    collection: string;
    parent: string | undefined;
    id: string;
    kind: OperationKind;
    body: JsonObject | undefined;
    status: number;
    /** The server's stable code (protocol §7), e.g. `unknown_field`, `forbidden`. */
    code: string;
    detail: string;
}

async function enqueue(tx: SqlExecutor, collection: string, id: string, parent: string, op: OperationKind, body: string | null): Promise<void> {
    await tx.run(
        `INSERT INTO queue (collection, parent, id, op, body) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET op = excluded.op, body = excluded.body, rev = queue.rev + 1`,
        [collection, parent, id, op, body]
    );
}

/** A local save applied at once and queued as a PUT, in the caller's transaction. */
export async function saveLocal(tx: SqlExecutor, collection: ModelCollection, id: string, parent: string, body: JsonObject): Promise<void> {
    const item: JsonObject = { ...body, id };
    const text = canonicalText(item);
    await tx.run(
        `INSERT INTO items (collection, parent, id, local, sortKey) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (collection, parent, id) DO UPDATE SET local = excluded.local, localDeleted = 0,
    sortKey = CASE WHEN items.server IS NULL THEN excluded.sortKey ELSE items.sortKey END`,
        [collection.name, parent, id, text, sortKey(collection, item)]
    );
    await enqueue(tx, collection.name, id, parent, "put", text);
}

/**
 * A local edit of some fields applied at once and queued as a JSON Merge Patch (§2). Folding: patch + patch is one
 * patch (the later value of a field wins); a patch of an item queued for a PUT, or never pushed, is a PUT of the result.
 */
export async function patchLocal(tx: SqlExecutor, collection: ModelCollection, id: string, parent: string, patch: JsonObject): Promise<void> {
    const rows = await tx.query("SELECT server, local FROM items WHERE collection = ? AND parent = ? AND id = ?", [collection.name, parent, id]);
    const server = parseObject(rows[0]?.server as string | null | undefined);
    const local = parseObject(rows[0]?.local as string | null | undefined);
    const result: JsonObject = storedItem(collection, local ?? server ?? {});
    Object.assign(result, patch);
    const queued = await tx.query("SELECT op, body FROM queue WHERE collection = ? AND parent = ? AND id = ?", [collection.name, parent, id]);
    const queuedKind = queued[0]?.op;
    if (server === null || (queuedKind !== undefined && queuedKind !== "patch")) {
        await saveLocal(tx, collection, id, parent, result);
        return;
    }
    const merged: JsonObject = { ...(parseObject(queued[0]?.body as string | null | undefined) ?? {}), ...patch };
    result.id = id;
    await tx.run("UPDATE items SET local = ?, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?", [
        canonicalText(result),
        collection.name,
        parent,
        id,
    ]);
    await enqueue(tx, collection.name, id, parent, "patch", canonicalText(merged));
}

/**
 * A local delete applied at once and queued. Create + delete never pushed is nothing at all; a creation a push has
 * already read may be on the server, so its delete is queued.
 */
export async function deleteLocal(tx: SqlExecutor, collection: string, id: string, parent: string): Promise<void> {
    const item = await tx.query("SELECT server IS NOT NULL AS onServer FROM items WHERE collection = ? AND parent = ? AND id = ?", [collection, parent, id]);
    const sent = await tx.query("SELECT sent FROM queue WHERE collection = ? AND parent = ? AND id = ?", [collection, parent, id]);
    if (item[0] !== undefined && Number(item[0].onServer) === 0 && Number(sent[0]?.sent ?? 0) !== 1) {
        await tx.run("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ?", [collection, parent, id]);
        await tx.run("DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", [collection, parent, id]);
        return;
    }
    await tx.run(
        `INSERT INTO items (collection, parent, id, localDeleted) VALUES (?, ?, ?, 1)
ON CONFLICT (collection, parent, id) DO UPDATE SET local = NULL, localDeleted = 1`,
        [collection, parent, id]
    );
    await enqueue(tx, collection, id, parent, "delete", null);
}

/** Whether anything waits to leave: a queued write, or an upload the server has not refused (media leave first). */
export async function hasQueued(tx: SqlExecutor): Promise<boolean> {
    return (await tx.query("SELECT 1 AS one FROM queue UNION ALL SELECT 1 FROM uploads WHERE status IS NULL LIMIT 1")).length > 0;
}

/** The queue for a push, every entry marked `sent` in the same transaction. */
export async function takeForPush(tx: SqlExecutor): Promise<PendingOperation[]> {
    await tx.run("UPDATE queue SET sent = 1 WHERE sent = 0");
    return pending(tx);
}

function kindOf(value: unknown): OperationKind | undefined {
    return value === "put" || value === "patch" || value === "delete" ? value : undefined;
}

/** The members a queued and a failed operation share, from their row; undefined for an unknown kind. */
function operationOf(row: SqlRow): Omit<PendingOperation, "revision"> | undefined {
    const kind = kindOf(row.op);
    if (!kind) return undefined;
    const parent = String(row.parent);
    return {
        collection: String(row.collection),
        parent: parent === "" ? undefined : parent,
        id: String(row.id),
        kind,
        body: parseObject(row.body as string | null) ?? undefined,
    };
}

export async function pending(tx: SqlExecutor): Promise<PendingOperation[]> {
    const rows = await tx.query("SELECT collection, parent, id, op, body, rev FROM queue ORDER BY seq");
    const operations: PendingOperation[] = [];
    for (const row of rows) {
        const operation = operationOf(row);
        if (operation) operations.push({ ...operation, revision: Number(row.rev) });
    }
    return operations;
}

export async function failed(tx: SqlExecutor): Promise<FailedOperation[]> {
    const rows = await tx.query("SELECT collection, parent, id, op, body, status, code, detail FROM failed ORDER BY seq");
    const operations: FailedOperation[] = [];
    for (const row of rows) {
        const operation = operationOf(row);
        if (!operation) continue;
        operations.push({
            ...operation,
            status: Number(row.status),
            code: String(row.code),
            detail: String(row.detail),
        });
    }
    return operations;
}

/** The server took the write: its answer becomes the item's version, and the entry goes unless an edit came after the push began. */
export async function landed(
    tx: SqlExecutor,
    model: ServerModel,
    op: PendingOperation,
    layout: ModelCollection,
    server: JsonObject | undefined,
    etag: string | null | undefined
): Promise<void> {
    const parent = op.parent ?? "";
    const current = await tx.query("SELECT rev FROM queue WHERE collection = ? AND parent = ? AND id = ?", [op.collection, parent, op.id]);
    if (current[0] !== undefined && Number(current[0].rev) === op.revision) {
        await tx.run("DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", [op.collection, parent, op.id]);
        await tx.run("UPDATE items SET local = NULL, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?", [op.collection, parent, op.id]);
    }
    if (server) {
        await storeServer(tx, layout, parent, server, etag);
    } else {
        await removeServer(tx, model, layout, parent, op.id);
    }
}

/** The server refused the write for good: it moves to the failed list and the local edit is undone. */
export async function refused(tx: SqlExecutor, op: PendingOperation, status: number, code: string, detail: string): Promise<void> {
    const parent = op.parent ?? "";
    await tx.run("INSERT INTO failed (collection, parent, id, op, body, status, code, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        op.collection,
        parent,
        op.id,
        op.kind,
        op.body === undefined ? null : canonicalText(op.body),
        status,
        code,
        detail,
    ]);
    await tx.run("DELETE FROM queue WHERE collection = ? AND parent = ? AND id = ?", [op.collection, parent, op.id]);
    await tx.run("UPDATE items SET local = NULL, localDeleted = 0 WHERE collection = ? AND parent = ? AND id = ?", [op.collection, parent, op.id]);
    await tx.run("DELETE FROM items WHERE collection = ? AND parent = ? AND id = ? AND server IS NULL", [op.collection, parent, op.id]);
}

/** The server's version of the item and its ETag, as last stored. */
export async function base(tx: SqlExecutor, op: PendingOperation): Promise<{ server: JsonObject | undefined; etag: string | undefined }> {
    const rows = await tx.query("SELECT server, etag FROM items WHERE collection = ? AND parent = ? AND id = ?", [op.collection, op.parent ?? "", op.id]);
    const row = rows[0];
    if (!row) return { server: undefined, etag: undefined };
    return { server: parseObject(row.server as string | null) ?? undefined, etag: typeof row.etag === "string" ? row.etag : undefined };
}
