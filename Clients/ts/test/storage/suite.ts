// One suite for every storage driver: the StorageDriver contract (atomic transactions, calls that wait for a
// transaction, rows and change counts), then the client itself over the driver against the real server: a first sync,
// deltas, local writes pushed, and a replica reopened from its file with its unsent writes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { StorageDriver, SyncClient } from "../../src/index.js";
import { migrate } from "../../src/schema.js";
import { FileTokenStore } from "../../src/node.js";
import { username } from "../support/clients.js";
import { raw, rawLogIn, TestServer } from "../support/server.js";

/** Opens (creating when missing) the driver's database at a file path. */
export type OpenDriver = (path: string) => Promise<StorageDriver>;

/**
 * Registers the suite for the driver `open` makes, in the calling test file (which gets its own server). `sql`: the
 * driver runs any SQL (an SQLite engine), not only the replica's statements.
 */
export function driverSuite(name: string, open: OpenDriver, options: { sql: boolean } = { sql: true }): void {
    let server: TestServer;
    before(async () => {
        server = await TestServer.start();
    });
    after(async () => {
        await server?.stop();
    });

    // Any SQL: for the drivers over an SQLite engine (the statement table knows the replica's statements only).
    if (options.sql) test(`${name}: statements, change counts, rows as plain values`, async () => {
        const db = await open(server.path("contract.sqlite"));
        try {
            await db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, b BLOB); CREATE TABLE u (x INTEGER)");
            assert.deepEqual(await db.run("INSERT INTO t (k, n, b) VALUES (?, ?, ?)", ["a", 1, new Uint8Array([1, 2])]), { changes: 1 });
            assert.deepEqual(await db.run("INSERT INTO t (k, n) VALUES (?, ?)", ["b", 2n]), { changes: 1 });
            assert.deepEqual(await db.run("UPDATE t SET n = n + 1"), { changes: 2 });
            const rows = await db.query("SELECT k, n, b, n > 2 AS big FROM t ORDER BY k");
            assert.deepEqual(rows, [
                { k: "a", n: 2, b: new Uint8Array([1, 2]), big: 0 },
                { k: "b", n: 3, b: null, big: 1 },
            ]);
            assert.deepEqual(await db.query("SELECT k FROM t WHERE k = ?", ["none"]), []);
        } finally {
            await db.close();
        }
    });

    test(`${name}: a transaction is all or nothing, and other calls wait for it`, async () => {
        const db = await open(server.path("atomic.sqlite"));
        try {
            await migrate(db);
            const insert = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)";
            await assert.rejects(
                db.transaction(async (tx) => {
                    await tx.run(insert, ["gone", "1"]);
                    throw new Error("undone");
                }),
                /undone/
            );
            assert.deepEqual(await db.query("SELECT value FROM meta WHERE key = ?", ["gone"]), []);

            let release!: () => void;
            const gate = new Promise<void>((resolve) => (release = resolve));
            const order: string[] = [];
            let handle: { run(sql: string, params?: string[]): Promise<unknown> } | undefined;
            const running = db.transaction(async (tx) => {
                handle = tx;
                await tx.run(insert, ["in", "1"]);
                await gate;
                order.push("transaction");
                return 42;
            });
            const outside = db.query("SELECT value FROM meta WHERE key = ?", ["in"]).then((rows) => {
                order.push("query");
                return rows;
            });
            await new Promise((resolve) => setTimeout(resolve, 20));
            release();
            assert.equal(await running, 42);
            assert.deepEqual(await outside, [{ value: "1" }]);
            assert.deepEqual(order, ["transaction", "query"]);
            await assert.rejects(handle!.run(insert, ["late", "1"]), /ended/);
        } finally {
            await db.close();
        }
        await assert.rejects(db.query("SELECT value FROM meta WHERE key = ?", ["in"]), /closed/);
    });

    test(`${name}: the client syncs, pushes and reopens its replica over the driver`, async () => {
        const path = server.path(`client-${name}.sqlite`);
        const options = { serverUrl: server.url, pushDelayMs: null, onlineEvents: null, retryPolicy: { attempts: 2, baseDelayMs: 50 } };
        let storage = await open(path);
        let client = await SyncClient.open({ ...options, storage, tokenStore: new FileTokenStore(path + ".token") });
        const user = username("drv");
        await client.signUp({ family: "Smith", username: user, password: "password1" });
        const first = await client.sync();
        assert.ok(first.replaced.includes("contacts"));
        assert.equal((await client.singleton("family"))?.name, "Smith");

        const other = await rawLogIn(server, user);
        assert.equal((await raw(server, other, "PUT", "/contacts/c1", { firstName: "Ann" })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/threads/t1", { title: "Hi" })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/threads/t1/messages/m1", { text: "hello" })).status, 200);
        await client.sync();
        assert.deepEqual((await client.items("contacts")).map((item) => item.firstName), ["Ann"]);
        assert.deepEqual((await client.items("messages", { parent: "t1" })).map((item) => item.text), ["hello"]);

        await client.save("contacts", { id: "c2", firstName: "Bob" });
        await client.patch("contacts", "c1", { lastName: "Lee" });
        assert.equal((await client.push()).pushed, 2);
        assert.equal((await raw(server, other, "GET", "/contacts/c1")).body.lastName, "Lee");
        assert.equal((await raw(server, other, "DELETE", "/contacts/c2")).status, 204);

        // Written while closing: the queue and the replica outlive the driver.
        await client.save("events", { id: "e1", title: "Dinner", start: "2026-05-01T19:00:00Z" });
        await client.close();
        await storage.close();
        storage = await open(path);
        client = await SyncClient.open({ ...options, storage, tokenStore: new FileTokenStore(path + ".token") });
        try {
            assert.equal((await client.pendingOperations()).length, 1);
            assert.deepEqual((await client.items("contacts")).map((item) => item.id).sort(), ["c1", "c2"]);
            const report = await client.sync();
            assert.equal(report.pushed, 1);
            assert.deepEqual((await client.items("contacts")).map((item) => item.id), ["c1"]);
            assert.equal((await raw(server, other, "GET", "/events/e1")).body.title, "Dinner");
            assert.equal(await client.heldCount("contacts"), 1);
        } finally {
            await client.close();
            await storage.close();
        }
    });
}
