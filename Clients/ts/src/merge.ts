import { jsonEqual, JsonObject, JsonValue } from "./json.js";
import { PendingOperation } from "./replica.js";

/**
 * The three-way merge of one write conflict, field by field (the Swift SDK's `FieldMerge`): the fields each side
 * changed since the base, and the ones both changed to different values. `merged` is the server's version with the
 * local changes of the fields only the local side changed; `conflicting` the fields both changed (sorted), where it
 * keeps the server's value.
 */
export interface FieldMerge {
    merged: JsonObject;
    conflicting: string[];
    localChanged: Set<string>;
}

/** `base`, `local` and `server` of one item (all present); `ignored`: the server-set fields. */
export function fieldMerge(base: JsonObject, local: JsonObject, server: JsonObject, ignored: Set<string>): FieldMerge {
    const keys = new Set([...Object.keys(base), ...Object.keys(local), ...Object.keys(server)]);
    const merged: JsonObject = { ...server };
    const conflicting: string[] = [];
    const localChanged = new Set<string>();
    for (const key of keys) {
        if (ignored.has(key)) continue;
        const was = base[key] ?? null;
        const mine = local[key] ?? null;
        const theirs = server[key] ?? null;
        if (jsonEqual(mine, was)) continue;
        localChanged.add(key);
        if (!jsonEqual(theirs, was) && !jsonEqual(theirs, mine)) {
            conflicting.push(key);
        } else {
            merged[key] = mine;
        }
    }
    return { merged, conflicting: conflicting.sort(), localChanged };
}

const dateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Whether two values are the same: equal JSON, or two RFC 3339 date-times that name the same instant. */
function sameValue(a: JsonValue, b: JsonValue): boolean {
    if (jsonEqual(a, b)) return true;
    if (typeof a === "string" && typeof b === "string" && dateTime.test(a) && dateTime.test(b)) {
        const x = Date.parse(a);
        return !Number.isNaN(x) && x === Date.parse(b);
    }
    return false;
}

/**
 * The members of `object` whose value differs from `current` (server-set fields aside): what a typed save sends as
 * its merge patch. A field the object leaves out is not a change (an app older than the model never erases a field
 * it does not know).
 */
export function changedFields(object: JsonObject, current: JsonObject, serverSet: Set<string>): JsonObject {
    const changes: JsonObject = {};
    for (const [key, value] of Object.entries(object)) {
        if (serverSet.has(key) || value === undefined) continue;
        if (sameValue(value, current[key] ?? null)) continue;
        changes[key] = value;
    }
    return changes;
}

/** What the app holds locally for a write: the PUT's state, the patch applied to the base, nothing for a delete. */
export function localVersion(op: PendingOperation, base: JsonObject | undefined): JsonObject | undefined {
    switch (op.kind) {
        case "put":
            return op.body;
        case "delete":
            return undefined;
        case "patch":
            return { ...(base ?? {}), ...(op.body ?? {}) };
    }
}

/** The client's fields all equal on the server (server-set fields aside; a field left out equals the server's null). */
export function sameContent(local: JsonObject, server: JsonObject, serverSet: Set<string>): boolean {
    for (const [key, value] of Object.entries(local)) {
        if (serverSet.has(key)) continue;
        if (!jsonEqual(value, server[key] ?? null)) return false;
    }
    return true;
}

/** Whether the server already holds what the operation would write (a retried write whose first attempt landed). */
export function alreadyThere(op: PendingOperation, server: JsonObject | undefined, serverSet: Set<string>): boolean {
    if (op.kind === "delete") return server === undefined;
    if (!server || !op.body) return false;
    return sameContent(op.body, server, serverSet);
}
