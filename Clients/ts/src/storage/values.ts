import { SqlRow, SqlValue } from "./driver.js";

/**
 * A value as the React Native libraries bind it: they take numbers, strings, null and byte arrays, not bigints (a
 * bigint within 2^53 is passed as a number, a larger one as its decimal text, which SQLite's affinity turns back
 * into an integer for an INTEGER column).
 */
export type BindValue = null | number | string | Uint8Array;

export function bindValue(value: SqlValue | undefined): BindValue {
    if (value === undefined || value === null) return null;
    if (typeof value === "bigint") {
        return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
    }
    return value;
}

export function bindAll(params: readonly SqlValue[] | undefined): BindValue[] {
    return (params ?? []).map(bindValue);
}

/** A row as the client reads it: a plain object of SQL values (blobs as `Uint8Array`, booleans as 0 or 1). */
export function plainRow(row: Record<string, unknown>): SqlRow {
    const plain: SqlRow = {};
    for (const [column, value] of Object.entries(row)) {
        if (value instanceof ArrayBuffer) plain[column] = new Uint8Array(value);
        else if (typeof value === "boolean") plain[column] = value ? 1 : 0;
        else if (value === undefined) plain[column] = null;
        else plain[column] = value as SqlValue;
    }
    return plain;
}
