import { SyncClientError } from "./errors.js";
import { queryEscape } from "./http.js";
import { isObject, JsonValue, parseObject } from "./json.js";
import { SyncEndpoint } from "./model.js";
import { lastServerId } from "./replica.js";
import { SqlExecutor } from "./storage/driver.js";

// Verify and repair (protocol §11), the Swift SDK's `SyncClient+Verify.swift`: a sync and `GET /verify` in one group
// (one snapshot, one date), each list's count and digest compared with the replica's, and the lists that differ
// downloaded again whole in a second sync (unsent edits stay on top).

/** One list's count and digest, as `GET /verify` answers it and as the replica computes it. */
export interface ListDigest {
    count: number;
    /** Lowercase hex SHA-256 over the items sorted by id (bytes): `id`, NUL, `modified`, newline. */
    digest: string;
}

/** A `GET /verify` answer: the date of sync of the state it describes, and each list's digest. */
export interface VerifyAnswer {
    date: string;
    lists: Record<string, ListDigest>;
}

/** What `verify()` found: the lists compared, the ones that differed and were downloaded again, and the date. */
export interface VerifyReport {
    checked: string[];
    repaired: string[];
    /** The date of sync the replica is at after the comparison (and the repair). */
    date: string | undefined;
    /** True when every list matched. */
    exact: boolean;
}

/** The sync the verification runs: `fresh` lists asked without a date; `verify` added to its group and answered. */
export type VerifyingSync = (options: { fresh?: ReadonlySet<string>; verify?: VerifyCall }) => Promise<{ date?: string }>;

/** The `GET /verify` sub-request of a sync group, and its answer once the group applied. */
export interface VerifyCall {
    url: string;
    status?: number;
    body?: JsonValue | undefined;
}

/** `GET /verify` for the part of each paginated list the replica holds (`<list>LastId`, its last held item). */
export async function verifyUrl(db: SqlExecutor, endpoints: readonly SyncEndpoint[]): Promise<string> {
    const query: string[] = [];
    for (const endpoint of endpoints) {
        if (endpoint.shape !== "paginated") continue;
        const list = endpoint.members[0]!;
        const last = await lastServerId(db, list.name);
        if (last !== undefined) query.push(`${list.name}LastId=${queryEscape(last)}`);
    }
    return "/api/v1/verify" + (query.length === 0 ? "" : "?" + query.join("&"));
}

/** Reads a `GET /verify` answer; throws `invalid_answer` when it is not one. */
export function parseVerifyAnswer(body: JsonValue | undefined): VerifyAnswer {
    if (!isObject(body) || typeof body.date !== "string" || !isObject(body.lists)) {
        throw SyncClientError.invalidAnswer('the verify answer is not {"date", "lists"}');
    }
    const lists: Record<string, ListDigest> = {};
    for (const [name, entry] of Object.entries(body.lists)) {
        if (!isObject(entry) || typeof entry.count !== "number" || typeof entry.digest !== "string") {
            throw SyncClientError.invalidAnswer(`the verify answer's ${name} has no count and digest`);
        }
        lists[name] = { count: entry.count, digest: entry.digest };
    }
    return { date: body.date, lists };
}

/** Count and digest of each list as the replica holds the server's versions (top-level items, unsent edits aside). */
export async function localDigests(db: SqlExecutor, lists: readonly string[]): Promise<Record<string, ListDigest>> {
    const out: Record<string, ListDigest> = {};
    const encoder = new TextEncoder();
    for (const name of lists) {
        const rows = await db.query("SELECT id, server FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL", [name]);
        const entries = rows.map((row) => {
            const modified = parseObject(String(row.server))?.modified;
            return { id: encoder.encode(String(row.id)), modified: encoder.encode(typeof modified === "string" ? modified : "") };
        });
        entries.sort((a, b) => compareBytes(a.id, b.id));
        const parts: Uint8Array[] = [];
        for (const entry of entries) parts.push(entry.id, Uint8Array.of(0), entry.modified, Uint8Array.of(10));
        out[name] = { count: entries.length, digest: sha256Hex(concat(parts)) };
    }
    return out;
}

/** Runs a verifying sync, compares, and downloads again whole the lists that differ (a second sync). */
export async function verifyAndRepair(db: SqlExecutor, endpoints: readonly SyncEndpoint[], sync: VerifyingSync): Promise<VerifyReport> {
    const call: VerifyCall = { url: await verifyUrl(db, endpoints) };
    const first = await sync({ verify: call });
    if (call.status !== 200) {
        if (call.status === undefined) throw SyncClientError.invalidAnswer("the group carried no verify answer");
        throw SyncClientError.from(call.status, call.body, null);
    }
    const answer = parseVerifyAnswer(call.body);
    const names = Object.keys(answer.lists).sort();
    const local = await localDigests(db, names);
    const repaired = names.filter((name) => local[name]?.count !== answer.lists[name]!.count || local[name]?.digest !== answer.lists[name]!.digest);
    let date = first.date;
    if (repaired.length > 0) date = (await sync({ fresh: new Set(repaired) })).date;
    return { checked: names, repaired, date, exact: repaired.length === 0 };
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
    const length = Math.min(a.length, b.length);
    for (let i = 0; i < length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return a.length - b.length;
}

function concat(parts: Uint8Array[]): Uint8Array {
    const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.length;
    }
    return out;
}

const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 of `bytes` as lowercase hex (FIPS 180-4): no platform crypto needed, as in the Swift SDK's `SHA256.swift`. */
export function sha256Hex(bytes: Uint8Array): string {
    const length = bytes.length;
    const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
    padded.set(bytes);
    padded[length] = 0x80;
    const view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
    view.setUint32(padded.length - 4, (length << 3) >>> 0);
    const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    const w = new Uint32Array(64);
    const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n));
    for (let block = 0; block < padded.length; block += 64) {
        for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + i * 4);
        for (let i = 16; i < 64; i++) {
            const s0 = rotr(w[i - 15]!, 7) ^ rotr(w[i - 15]!, 18) ^ (w[i - 15]! >>> 3);
            const s1 = rotr(w[i - 2]!, 17) ^ rotr(w[i - 2]!, 19) ^ (w[i - 2]! >>> 10);
            w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
        }
        let [a, b, c, d, e, f, g, hh] = h as unknown as number[];
        for (let i = 0; i < 64; i++) {
            const t1 = (hh! + (rotr(e!, 6) ^ rotr(e!, 11) ^ rotr(e!, 25)) + ((e! & f!) ^ (~e! & g!)) + K[i]! + w[i]!) >>> 0;
            const t2 = ((rotr(a!, 2) ^ rotr(a!, 13) ^ rotr(a!, 22)) + ((a! & b!) ^ (a! & c!) ^ (b! & c!))) >>> 0;
            [hh, g, f, e, d, c, b, a] = [g, f, e, (d! + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
        }
        [a, b, c, d, e, f, g, hh].forEach((value, i) => (h[i] = (h[i]! + value!) >>> 0));
    }
    return [...h].map((word) => word.toString(16).padStart(8, "0")).join("");
}
