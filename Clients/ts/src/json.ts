/** A JSON value as the server sent it. Items are kept as JSON, so fields this client does not know survive a round trip. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object: an item as the server sent it, or the body of a call. */
export interface JsonObject {
    [key: string]: JsonValue;
}

/** Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Compact JSON text with the keys of every object sorted: the form the Swift SDK stores items in (`JSONEncoder` with
 * `.sortedKeys` and `.withoutEscapingSlashes`), so both SDKs write the same text for the same item, and two texts
 * compare equal exactly when the values do. Keys sort by UTF-16 code unit, which is byte order for the ASCII names
 * a model allows (protocol §12).
 */
export function canonicalText(value: JsonValue | undefined): string {
    return JSON.stringify(sortKeys(value ?? null));
}

function sortKeys(value: JsonValue): JsonValue {
    if (Array.isArray(value)) return value.map(sortKeys);
    if (!isObject(value)) return value;
    const sorted: JsonObject = {};
    for (const key of Object.keys(value).sort(compareKeys)) {
        const member = value[key];
        if (member !== undefined) sorted[key] = sortKeys(member);
    }
    return sorted;
}

function compareKeys(a: string, b: string): number {
    return a < b ? -1 : a > b ? 1 : 0;
}

/** Value equality of two JSON values (a missing member and `undefined` are the same; key order does not matter). */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
    return canonicalText(a) === canonicalText(b);
}

/** Parses JSON text into an object, or null when it is not one (a stored row the client cannot read is skipped). */
export function parseObject(text: string | null | undefined): JsonObject | null {
    if (text === null || text === undefined) return null;
    try {
        const value: unknown = JSON.parse(text);
        return isObject(value) ? (value as JsonObject) : null;
    } catch {
        return null;
    }
}
