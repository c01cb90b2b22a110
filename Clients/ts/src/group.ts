import { SyncClientError } from "./errors.js";
import { queryEscape } from "./http.js";
import { canonicalText, isObject, JsonValue } from "./json.js";
import { itemPath, ModelCollection, ServerModel, SyncEndpoint } from "./model.js";
import * as replica from "./replica.js";
import { MetaKey, PendingOperation } from "./replica.js";
import { SqlExecutor } from "./storage/driver.js";
import type { ServerLimits } from "./client.js";

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
