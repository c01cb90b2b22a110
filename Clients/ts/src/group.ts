import { SyncClientError } from "./errors.js";
import { queryEscape } from "./http.js";
import { canonicalText, isObject, JsonValue, parseObject } from "./json.js";
import { itemPath, ModelCollection, ServerModel, SyncEndpoint } from "./model.js";
import * as replica from "./replica.js";
import { MetaKey, PendingOperation } from "./replica.js";
import { SqlExecutor } from "./storage/driver.js";
import type { ServerLimits } from "./client.js";
import { JsonStreamReader } from "./stream-json.js";

// The sync group on the wire, out of client.ts: the calls of one group from the replica's state, its answer read and
// applied, and the pushes' writes cut into groups that fit the server's limits.

/** One sub-request of a `POST /group` (protocol §6). */
export interface SubRequest {
    id: string;
    method: string;
    url: string;
    body?: JsonValue;
    headers?: Record<string, string>;
}

/** One sub-response of a group's answer, its headers by name as sent. */
export interface SubResponse {
    id: string;
    status: number;
    headers: Record<string, string>;
    body: JsonValue | undefined;
}

/** A sub-response's header, whatever its case. */
export function header(response: SubResponse, name: string): string | undefined {
    const key = Object.keys(response.headers).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : response.headers[key];
}

/** The error a sub-response means. */
export function subError(response: SubResponse): SyncClientError {
    return SyncClientError.from(response.status, response.body, header(response, "Retry-After"));
}

/** One key per item a write touches. */
export function operationKey(op: PendingOperation): string {
    return `${op.collection}\u0000${op.parent ?? ""}\u0000${op.id}`;
}

/** The path of the item a write touches. */
export function operationPath(op: PendingOperation, layout: ModelCollection): string {
    return itemPath(layout, op.id, op.parent) ?? `/${op.collection}`;
}

/** How many of `operations` the next group takes (one at least): at most `groupMaxRequests`, and about `bodyMaxBytes` of JSON. */
export function firstBatchCount(operations: readonly PendingOperation[], limits: ServerLimits): number {
    let count = 0;
    let size = 0;
    const budget = Math.max(1024, limits.bodyMaxBytes - 1024);
    for (const op of operations) {
        const cost = (op.body ? new TextEncoder().encode(canonicalText(op.body)).byteLength : 0) + 200;
        if (count > 0 && (count >= Math.max(1, limits.groupMaxRequests) || size + cost > budget)) break;
        count += 1;
        size += cost;
    }
    return count;
}

/** `operations` cut into groups that fit `limits`. */
export function batches(operations: PendingOperation[], limits: ServerLimits): PendingOperation[][] {
    const parts: PendingOperation[][] = [];
    let rest = operations;
    while (rest.length > 0) {
        const count = firstBatchCount(rest, limits);
        parts.push(rest.slice(0, count));
        rest = rest.slice(count);
    }
    return parts;
}

/** `operations` in two halves (a group refused for its size is halved while refused). */
export function halves(operations: PendingOperation[]): PendingOperation[][] {
    const middle = Math.ceil(operations.length / 2);
    return [operations.slice(0, middle), operations.slice(middle)];
}

/** A group's answer (`{"responses": [{"id", "status", "headers", "body"}]}`), by id. */
export function parseGroup(json: JsonValue | undefined): Map<string, SubResponse> {
    if (!isObject(json) || !Array.isArray(json.responses)) throw SyncClientError.invalidAnswer('the group answer is not {"responses": […]}');
    const responses = new Map<string, SubResponse>();
    for (const entry of json.responses) {
        if (!isObject(entry) || typeof entry.id !== "string" || typeof entry.status !== "number") {
            throw SyncClientError.invalidAnswer("a group response without id or status");
        }
        const headers: Record<string, string> = {};
        if (isObject(entry.headers)) {
            for (const [name, value] of Object.entries(entry.headers)) if (typeof value === "string") headers[name] = value;
        }
        responses.set(entry.id, { id: entry.id, status: entry.status, headers, body: entry.body === null ? undefined : entry.body });
    }
    return responses;
}

/**
 * The sync calls of one group, one per sync endpoint (its name is the call's id), from the replica's state: the
 * stored date (one date is valid for all), no date for a `fresh` collection nor one the stored date does not cover (one the server
 * added since), nor for a paginated list the replica holds no item of (§4), whose `lastId` is otherwise its last held item.
 */
export async function syncRequests(
    db: SqlExecutor,
    endpoints: SyncEndpoint[],
    pageSize: number,
    maxChildren: number,
    fresh: ReadonlySet<string> = new Set()
): Promise<SubRequest[]> {
    const date = await replica.getMeta(db, MetaKey.date);
    const synced = new Set((await replica.getMeta(db, MetaKey.synced) ?? "").split(",").filter((name) => name !== ""));
    const requests: SubRequest[] = [];
    for (const endpoint of endpoints) {
        const covered = endpoint.members.every(
            (member) => !fresh.has(member.name) && synced.has(member.name) && (member.children === undefined || synced.has(member.children))
        );
        const since = covered ? date : undefined;
        if (endpoint.shape === "paginated") {
            const list = endpoint.members[0]!;
            let query = `nb=${pageSize}`;
            if (list.children) query += `&max${list.children}=${maxChildren}`;
            const last = since === undefined ? undefined : await replica.lastServerId(db, list.name);
            if (since !== undefined && last !== undefined) query += `&date=${queryEscape(since)}&lastId=${queryEscape(last)}`;
            requests.push({ id: endpoint.name, method: "GET", url: `/api/v1/${endpoint.name}?${query}` });
        } else {
            requests.push({ id: endpoint.name, method: "GET", url: `/api/v1/${endpoint.name}` + (since === undefined ? "" : `?date=${queryEscape(since)}`) });
        }
    }
    return requests;
}

/** Applies one endpoint's answer; its date and the collections it replaced. */
export async function applyEndpoint(
    tx: SqlExecutor,
    model: ServerModel,
    endpoint: SyncEndpoint,
    body: JsonValue | undefined
): Promise<{ date: string; lists: string[] }> {
    const first = endpoint.members[0]!;
    switch (endpoint.shape) {
        case "list": {
            const answer = replica.parseListAnswer(body, endpoint.name);
            await replica.applyList(tx, model, first, answer);
            return { date: answer.date, lists: answer.sync ? [] : [first.name] };
        }
        case "paginated": {
            const answer = replica.parsePagedAnswer(body, endpoint.name);
            await replica.applyPaged(tx, model, first, answer);
            return { date: answer.date, lists: answer.sync && !answer.crop ? [] : [first.name] };
        }
        case "bundle": {
            const { date, sync } = await replica.applyBundle(tx, model, endpoint.members, body, endpoint.name);
            return { date, lists: sync ? [] : endpoint.members.map((member) => member.name) };
        }
    }
}

/** The date moves with the data, in the same transaction; with it, the collections it covers, and the held counts recounted. */
export async function recordSynced(tx: SqlExecutor, endpoints: SyncEndpoint[], date: string): Promise<void> {
    const members = endpoints.flatMap((endpoint) => endpoint.members);
    await replica.recountHeld(
        tx,
        members.map((member) => member.name)
    );
    const names = new Set<string>();
    for (const member of members) {
        names.add(member.name);
        if (member.children) names.add(member.children);
    }
    await replica.setMeta(tx, MetaKey.date, date);
    await replica.setMeta(tx, MetaKey.synced, [...names].sort().join(","));
}

// MARK: - A group's answer read as a stream

const openBrace = 0x7b;
const openBracket = 0x5b;

/** The error of a group answer that is not `{"responses": […]}` (malformed, cut short, another shape). */
export function notAGroup(): SyncClientError {
    return SyncClientError.invalidAnswer('the group answer is not {"responses": […]}');
}

/** What `readGroupStream` read: every sub-response by id, and the outcome of each list answer it applied as it came. */
export interface StreamedGroup {
    /** As `parseGroup` answers them; the body of an answer applied as it came is `undefined` (its rows are in the replica). */
    responses: Map<string, SubResponse>;
    /** The answers applied as they came (a list endpoint's 200 answer), by endpoint name. */
    applied: Map<string, { date: string; lists: string[] }>;
}

/**
 * Reads a sync group's answer from `reader` inside the sync's transaction `tx`, applying the items of each list
 * endpoint's 200 answer as they come (one item held at a time), every other sub-response (a paginated list or a
 * bundle, bounded by the server's byte budget; an error; `verify`) read whole. The caller checks every answer and
 * applies the rest once the whole group is read: a failed call or a malformed answer throws, and the transaction
 * undoes what was applied, so a group applies whole or not at all, as when it was read whole first.
 */
export async function readGroupStream(tx: SqlExecutor, model: ServerModel, endpoints: SyncEndpoint[], reader: JsonStreamReader): Promise<StreamedGroup> {
    const lists = new Map(endpoints.filter((endpoint) => endpoint.shape === "list").map((endpoint) => [endpoint.name, endpoint]));
    const responses = new Map<string, SubResponse>();
    const applied = new Map<string, { date: string; lists: string[] }>();
    if ((await reader.peek()) !== openBrace) throw notAGroup();
    await reader.beginObject();
    let read = false;
    for (let key = await reader.nextKey(); key !== undefined; key = await reader.nextKey()) {
        if (key !== "responses") {
            await reader.value();
            continue;
        }
        if (read || (await reader.peek()) !== openBracket) throw notAGroup();
        read = true;
        await reader.beginArray();
        while (await reader.nextElement()) {
            if ((await reader.peek()) !== openBrace) throw SyncClientError.invalidAnswer("a group response without id or status");
            await reader.beginObject();
            let id: JsonValue | undefined;
            let status: JsonValue | undefined;
            let headerValues: JsonValue | undefined;
            let body: JsonValue | undefined;
            let streamedAs: string | undefined;
            for (let name = await reader.nextKey(); name !== undefined; name = await reader.nextKey()) {
                if (name === "body") {
                    const endpoint = typeof id === "string" ? lists.get(id) : undefined;
                    if (streamedAs !== undefined) throw SyncClientError.invalidAnswer(`the group's answer ${streamedAs} has two bodies`);
                    if (endpoint && status === 200 && !applied.has(endpoint.name) && (await reader.peek()) === openBrace) {
                        streamedAs = endpoint.name;
                        applied.set(endpoint.name, await streamList(tx, model, endpoint, reader));
                        body = undefined;
                    } else {
                        body = await reader.value();
                    }
                } else if (name === "id") {
                    id = await reader.value();
                } else if (name === "status") {
                    status = await reader.value();
                } else if (name === "headers") {
                    headerValues = await reader.value();
                } else {
                    await reader.value();
                }
            }
            if (typeof id !== "string" || typeof status !== "number") throw SyncClientError.invalidAnswer("a group response without id or status");
            if (streamedAs !== undefined && (id !== streamedAs || status !== 200)) {
                throw SyncClientError.invalidAnswer(`the group's answer ${streamedAs} changed its id or status after its body`);
            }
            if (streamedAs === undefined && applied.has(id)) throw SyncClientError.invalidAnswer(`the group carried two answers ${id}`);
            const headers: Record<string, string> = {};
            if (isObject(headerValues)) {
                for (const [name, value] of Object.entries(headerValues)) if (typeof value === "string") headers[name] = value;
            }
            responses.set(id, { id, status, headers, body: body === null ? undefined : body });
        }
    }
    await reader.end();
    if (!read) throw notAGroup();
    return { responses, applied };
}

/**
 * A list answer (§3) applied as it is read: the same statements as `applyList`, in an order that gives the same rows.
 * `sync: false` clears the list before its first row; deletes then upserts when `deleted` comes first; when
 * `updated` comes first (as the server sends it), upserts then deletes, and an id in both (which §3 rules out) is
 * deleted then stored again, as deletes-then-upserts would leave it. A member that comes before `sync` is known is
 * read whole and applied at the end, in the rule's order.
 */
async function streamList(tx: SqlExecutor, model: ServerModel, endpoint: SyncEndpoint, reader: JsonStreamReader): Promise<{ date: string; lists: string[] }> {
    const collection = endpoint.members[0]!;
    const name = endpoint.name;
    await reader.beginObject();
    const whole = new Map<string, JsonValue>();
    let cleared = false;
    let updatedStreamed = false;
    let deletedStreamed = false;
    /** The ids stored by this answer before its deletes, in a delta (after a clear the replica's server rows tell). */
    let stored: Set<string> | undefined;
    const clear = async (): Promise<void> => {
        if (cleared) return;
        cleared = true;
        if (whole.get("sync") === false) await replica.clearServer(tx, model, collection);
    };
    const remove = async (id: string): Promise<void> => {
        if (!updatedStreamed || (stored !== undefined && !stored.has(id))) {
            await replica.removeServer(tx, model, collection, "", id);
            return;
        }
        const rows = await tx.query("SELECT server, etag FROM items WHERE collection = ? AND parent = ? AND id = ?", [collection.name, "", id]);
        const text = rows[0]?.server;
        await replica.removeServer(tx, model, collection, "", id);
        const item = typeof text === "string" ? parseObject(text) : null;
        if (item) await replica.storeServer(tx, collection, "", item);
    };
    for (let key = await reader.nextKey(); key !== undefined; key = await reader.nextKey()) {
        if (whole.has(key) || (key === "updated" && updatedStreamed) || (key === "deleted" && deletedStreamed)) {
            throw SyncClientError.invalidAnswer(`answer ${name} has ${key} twice`);
        }
        const streamable = (key === "updated" || key === "deleted") && typeof whole.get("sync") === "boolean" && (await reader.peek()) === openBracket;
        if (!streamable) {
            whole.set(key, await reader.value());
            continue;
        }
        await clear();
        await reader.beginArray();
        if (key === "updated") {
            updatedStreamed = true;
            if (!deletedStreamed && whole.get("sync") === true) stored = new Set();
            while (await reader.nextElement()) {
                const item = await reader.value();
                if (!isObject(item)) throw SyncClientError.invalidAnswer(`${name}.updated is not a list of objects`);
                await replica.storeServer(tx, collection, "", item);
                if (stored && typeof item.id === "string") stored.add(item.id);
            }
        } else {
            deletedStreamed = true;
            while (await reader.nextElement()) {
                const id = await reader.value();
                if (typeof id !== "string") throw SyncClientError.invalidAnswer(`${name}.deleted is not a list of ids`);
                await remove(id);
            }
        }
    }
    const date = whole.get("date");
    const sync = whole.get("sync");
    if (typeof date !== "string" || typeof sync !== "boolean") throw SyncClientError.invalidAnswer(`answer ${name} needs date, sync, updated and deleted`);
    if (!updatedStreamed && !deletedStreamed) {
        await replica.applyList(tx, model, collection, replica.parseListAnswer(Object.fromEntries(whole), name));
    } else {
        const updated = updatedStreamed ? [] : replica.objects(whole.get("updated"), `${name}.updated`);
        const deleted = deletedStreamed ? [] : replica.strings(whole.get("deleted"), `${name}.deleted`);
        for (const id of deleted) await remove(id);
        for (const item of updated) await replica.storeServer(tx, collection, "", item);
    }
    return { date, lists: sync ? [] : [collection.name] };
}
