// What needs no server: JSON text, the merge, errors and Retry-After, the retry policy, capped reads, the HTTP core's
// typed errors and logger hook, the storage driver, the token file.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
    canonicalText,
    ErrorCode,
    fieldMerge,
    HttpCore,
    jsonEqual,
    LogEntry,
    MemoryTokenStore,
    migrations,
    parseRetryAfter,
    readCapped,
    RetryPolicy,
    SyncClient,
    SyncClientError,
} from "../src/index.js";
import { changedFields } from "../src/merge.js";
import { Log } from "../src/logger.js";
import { FileTokenStore, NodeSqliteDriver } from "../src/node.js";
import { next } from "./support/server.js";
import { firstBatchCount } from "../src/client.js";

test("canonical text: compact, keys sorted at every depth, as the Swift SDK stores items", () => {
    const text = canonicalText({ b: 1, a: { d: [3, { z: null, y: "é/\n" }], c: true } });
    assert.equal(text, '{"a":{"c":true,"d":[3,{"y":"é/\\n","z":null}]},"b":1}');
    assert.ok(jsonEqual({ x: 1, y: [1, 2] }, { y: [1, 2], x: 1 }));
    assert.ok(!jsonEqual({ x: 1 }, { x: "1" }));
});

test("three-way merge: each side's fields kept, a field both changed is a conflict where the server's value stays", () => {
    const base = { id: "c1", firstName: "Ann", lastName: "Lee", notes: "a", modified: "1" };
    const local = { id: "c1", firstName: "Anna", lastName: "Lee", notes: "mine", modified: "1" };
    const server = { id: "c1", firstName: "Ann", lastName: "Li", notes: "theirs", modified: "2" };
    const merge = fieldMerge(base, local, server, new Set(["id", "modified"]));
    assert.deepEqual(merge.merged, { id: "c1", firstName: "Anna", lastName: "Li", notes: "theirs", modified: "2" });
    assert.deepEqual(merge.conflicting, ["notes"]);
    assert.deepEqual([...merge.localChanged].sort(), ["firstName", "notes"]);
    // The same change on both sides is no conflict.
    assert.deepEqual(fieldMerge(base, { ...base, notes: "x" }, { ...server, notes: "x" }, new Set()).conflicting, []);
});

test("changed fields: server-set fields and equal instants are no change; a field the object leaves out is none", () => {
    const current = { id: "e1", title: "A", start: "2026-01-01T00:00:00.000Z", location: "here", modified: "m" };
    const changes = changedFields({ id: "e1", title: "B", start: "2026-01-01T00:00:00Z", modified: "other" }, current, new Set(["id", "modified"]));
    assert.deepEqual(changes, { title: "B" });
});

test("Retry-After: seconds or an HTTP date; errors typed by status with the server's code", () => {
    assert.equal(parseRetryAfter("7"), 7);
    assert.equal(parseRetryAfter(new Date(Date.now() + 30_000).toUTCString(), Date.now()) !== undefined, true);
    assert.equal(parseRetryAfter("soon"), undefined);
    const throttled = SyncClientError.from(429, { code: "too_many_requests" }, "12");
    assert.equal(throttled.kind, "throttled");
    assert.equal(throttled.retryAfter, 12);
    assert.ok(throttled.isTransient);
    const refused = SyncClientError.from(400, { code: "invalid_field", detail: "bad", field: "title" }, null);
    assert.equal(refused.kind, "server");
    assert.equal(refused.code, ErrorCode.invalidField);
    assert.equal(refused.field, "title");
    assert.ok(!refused.isTransient);
    assert.equal(SyncClientError.from(401, { code: "invalid_credentials" }, null).kind, "invalidCredentials");
    assert.equal(SyncClientError.from(401, { code: "unauthorized" }, null).kind, "notSignedIn");
    assert.equal(SyncClientError.from(503, undefined, "3").code, "http_503");
    assert.ok(SyncClientError.from(413, { code: "payload_too_large" }, null).refusesGroupSize);
});

test("retry policy: exponential with jitter, never sooner than Retry-After, at once when Retry-After is past the maximum", async () => {
    const waits: number[] = [];
    const policy = new RetryPolicy({ attempts: 3, baseDelayMs: 100, maximumDelayMs: 5_000, random: () => 1, sleep: async (ms) => void waits.push(ms) });
    assert.equal(policy.delay(0), 100);
    assert.equal(policy.delay(3), 800);
    assert.equal(policy.delay(20), 5_000);
    assert.equal(policy.delay(0, 2), 2_000);
    let calls = 0;
    await assert.rejects(
        policy.run(async () => {
            calls += 1;
            throw SyncClientError.from(503, { code: "unavailable" }, "1");
        }),
        (error: unknown) => error instanceof SyncClientError && error.kind === "unavailable"
    );
    assert.equal(calls, 3);
    assert.deepEqual(waits, [1_000, 1_000]);
    calls = 0;
    await assert.rejects(
        policy.run(async () => {
            calls += 1;
            throw SyncClientError.from(429, { code: "too_many_requests" }, "60");
        })
    );
    assert.equal(calls, 1, "a Retry-After past the maximum is not waited for");
    calls = 0;
    await assert.rejects(
        policy.run(async () => {
            calls += 1;
            throw SyncClientError.from(400, { code: "invalid_field" }, null);
        })
    );
    assert.equal(calls, 1, "a refusal is never retried");
});

/** A body that never ends, counting how much of it was pulled. */
function endless(): { stream: ReadableStream<Uint8Array>; pulled: () => number; cancelled: () => boolean } {
    let pulled = 0;
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
            pulled += 1024;
            controller.enqueue(new Uint8Array(1024));
        },
        cancel() {
            cancelled = true;
        },
    });
    return { stream, pulled: () => pulled, cancelled: () => cancelled };
}

test("capped reads: a body that never ends is cancelled just past the cap; a declared length over it is refused unread", async () => {
    const body = endless();
    await assert.rejects(readCapped(new Response(body.stream), 10_000), (error: unknown) => {
        return error instanceof SyncClientError && error.code === ErrorCode.answerTooLarge;
    });
    assert.ok(body.cancelled());
    assert.ok(body.pulled() <= 10_000 + 4 * 1024, `read ${body.pulled()} bytes`);
    const declared = endless();
    const response = new Response(declared.stream, { headers: { "Content-Length": "999999" } });
    await assert.rejects(readCapped(response, 1_000));
    assert.equal(declared.pulled() <= 1024 * 2, true);
    assert.deepEqual([...(await readCapped(new Response("abc"), 3))], [97, 98, 99]);
});

test("HTTP core: problem+json answers become typed errors with the server's code; no answer is offline; the logger hears it", async () => {
    const entries: LogEntry[] = [];
    let mode: "problem" | "down" | "huge" = "problem";
    const http = new HttpCore({
        serverUrl: "http://127.0.0.1:9",
        answerMaxBytes: 4096,
        log: new Log((entry) => entries.push(entry)),
        fetch: async (url, init) => {
            assert.equal(url, "http://127.0.0.1:9/api/v1/contacts/x");
            assert.equal((init.headers as Record<string, string>)["Authorization"], "Bearer secret");
            if (mode === "down") throw new TypeError("fetch failed");
            if (mode === "huge") return new Response(endless().stream, { status: 200 });
            const problem = { type: "t", title: "Not found", status: 404, detail: "No such item.", code: "not_found" };
            return new Response(JSON.stringify(problem), { status: 404, headers: { "Content-Type": "application/problem+json" } });
        },
    });
    const answer = await http.call("GET", "/contacts/x", { token: "secret" });
    const error = answer.error();
    assert.ok(error instanceof SyncClientError);
    assert.equal(error.code, "not_found");
    assert.equal(error.detail, "No such item.");
    mode = "down";
    await assert.rejects(http.call("GET", "/contacts/x", { token: "secret" }), (e: unknown) => e instanceof SyncClientError && e.kind === "offline");
    mode = "huge";
    await assert.rejects(http.call("GET", "/contacts/x", { token: "secret" }), (e: unknown) => e instanceof SyncClientError && e.code === "answer_too_large");
    assert.ok(entries.some((entry) => entry.subsystem === "syncapi.client.http" && entry.message === "no answer"));
    assert.ok(entries.some((entry) => entry.message === "answer too large: not read further"));
    assert.ok(!JSON.stringify(entries).includes("secret"), "a token is never logged");
    assert.throws(() => new HttpCore({ serverUrl: "http://example.com", log: new Log(undefined) }), (e: unknown) => e instanceof SyncClientError);
});

test("push batches: at most groupMaxRequests writes and about bodyMaxBytes of JSON, one at least", () => {
    const op = (size: number) => ({ collection: "contacts", parent: undefined, id: "x", kind: "put" as const, body: { t: "x".repeat(size) }, revision: 1 });
    const limits = { groupMaxRequests: 3, nbMax: 500, maxChildren: 100, bodyMaxBytes: 4096 };
    assert.equal(firstBatchCount([op(1), op(1), op(1), op(1)], limits), 3);
    assert.equal(firstBatchCount([op(2000), op(2000), op(1)], limits), 1);
    assert.equal(firstBatchCount([op(100_000)], limits), 1);
});

test("node:sqlite driver: a transaction is all or nothing, and calls made while it runs wait for its end", async () => {
    const folder = mkdtempSync(join(tmpdir(), "syncapi-ts-unit-"));
    const path = join(folder, "replica.sqlite");
    const db = NodeSqliteDriver.open(path);
    try {
        assert.equal(statSync(path).mode & 0o777, 0o600);
        await db.exec("CREATE TABLE t (x INTEGER)");
        await assert.rejects(
            db.transaction(async (tx) => {
                await tx.run("INSERT INTO t (x) VALUES (?)", [1]);
                throw new Error("no");
            })
        );
        assert.deepEqual(await db.query("SELECT COUNT(*) AS n FROM t"), [{ n: 0 }]);
        let release!: () => void;
        const gate = new Promise<void>((done) => (release = done));
        const order: string[] = [];
        const writing = db.transaction(async (tx) => {
            await tx.run("INSERT INTO t (x) VALUES (1)");
            await gate;
            await tx.run("INSERT INTO t (x) VALUES (2)");
            order.push("transaction");
        });
        const reading = db.query("SELECT COUNT(*) AS n FROM t").then((rows) => {
            order.push("read");
            return rows;
        });
        release();
        await writing;
        assert.deepEqual((await reading).map((row) => ({ ...row })), [{ n: 2 }]);
        assert.deepEqual(order, ["transaction", "read"]);
    } finally {
        await db.close();
        rmSync(folder, { recursive: true, force: true });
    }
});

test("token file: 0600, the Swift SDK's JSON, replaced whole, cleared", async () => {
    const folder = mkdtempSync(join(tmpdir(), "syncapi-ts-unit-"));
    const store = new FileTokenStore(join(folder, "replica.sqlite.token"));
    try {
        assert.equal(await store.load(), undefined);
        await store.save({ token: "t1", accountID: "a", familyID: "f", expiresAt: "2030-01-01T00:00:00.000Z" });
        await store.save({ token: "t2", accountID: "a", familyID: "f" });
        assert.equal(statSync(store.path).mode & 0o777, 0o600);
        assert.deepEqual(JSON.parse(readFileSync(store.path, "utf8")), { token: "t2", accountID: "a", familyID: "f" });
        assert.deepEqual(await store.load(), { token: "t2", accountID: "a", familyID: "f" });
        await store.clear();
        assert.ok(!existsSync(store.path));
    } finally {
        rmSync(folder, { recursive: true, force: true });
    }
});

test("opening a replica: the schema made once, a newer SDK's migration named in the log; the session in memory by default", async () => {
    const folder = mkdtempSync(join(tmpdir(), "syncapi-ts-unit-"));
    const path = join(folder, "replica.sqlite");
    try {
        let storage = NodeSqliteDriver.open(path);
        let client = await SyncClient.open({ serverUrl: "http://127.0.0.1:9", storage, onlineEvents: null });
        assert.equal(client.isSignedIn, false);
        assert.equal((await storage.query("SELECT COUNT(*) AS n FROM grdb_migrations"))[0]!.n, migrations.length);
        await storage.run("INSERT INTO grdb_migrations (identifier) VALUES ('009-future')");
        await client.close();
        await storage.close();
        const entries: LogEntry[] = [];
        storage = NodeSqliteDriver.open(path);
        client = await SyncClient.open({ serverUrl: "http://127.0.0.1:9", storage, onlineEvents: null, logger: (entry) => entries.push(entry) });
        assert.deepEqual(
            entries.map((entry) => [entry.subsystem, entry.message, entry.metadata.migrations]),
            [["syncapi.client.replica", "the replica was migrated by a newer SDK", "009-future"]]
        );
        await assert.rejects(client.sync(), (error: unknown) => error instanceof SyncClientError && error.kind === "notSignedIn");
        const store = new MemoryTokenStore();
        await store.save({ token: "t", accountID: "a", familyID: "f" });
        assert.deepEqual(await store.load(), { token: "t", accountID: "a", familyID: "f" });
        await store.clear();
        assert.equal(await store.load(), undefined);
        await client.close();
        await storage.close();
    } finally {
        rmSync(folder, { recursive: true, force: true });
    }
});

test("the tests' next(): a value the source gives before it returns its stop (onStatus does) settles the wait", async () => {
    const immediate = (listener: (value: number) => void): (() => void) => {
        listener(42);
        return () => undefined;
    };
    assert.equal(await next(immediate, "an immediate value", () => true, 2000), 42);
    let stopped = 0;
    const later = (listener: (value: number) => void): (() => void) => {
        setTimeout(() => listener(7), 10);
        return () => void stopped++;
    };
    assert.equal(await next(later, "a later value"), 7);
    assert.equal(stopped, 1);
});
