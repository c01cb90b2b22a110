// The in-memory statement table (the IndexedDB driver's engine) against SQLite: the driver suite over a driver that
// runs each statement on both and fails at the first difference, then compares every table whole at each close.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SyncClient } from "../../src/index.js";
import { MemoryTokenStore } from "../../src/session.js";
import { compareText, knowsStatement } from "../../src/storage/replica-statements.js";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { username } from "../support/clients.js";
import { raw, rawLogIn, TestServer } from "../support/server.js";
import { DualDriver } from "./dual.js";
import { driverSuite } from "./suite.js";

driverSuite("statements", async (path) => new DualDriver(path), { sql: false });

test("statements: conflicts and their journal, refused writes, paginated lists and their pages, deletes, log out", async () => {
    const server = await TestServer.start();
    const storage = new DualDriver(server.path("rest.sqlite"));
    const client = await SyncClient.open({
        serverUrl: server.url,
        storage,
        tokenStore: new MemoryTokenStore(),
        pushDelayMs: null,
        onlineEvents: null,
        pageSize: 3,
        maxChildren: 2,
        retryPolicy: { attempts: 2, baseDelayMs: 50 },
    });
    try {
        const name = username("dual");
        await client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        for (const id of ["t1", "t2", "t3", "t4", "t5"]) await raw(server, other, "PUT", `/threads/${id}`, { title: id });
        for (const id of ["m1", "m2", "m3"]) await raw(server, other, "PUT", `/threads/t1/messages/${id}`, { text: id });
        await client.sync();
        assert.equal(await client.loadMore("messages", { parent: "t1" }), true);
        assert.equal(await client.loadMore("threads"), true);
        for (const id of ["t2", "t3", "t4", "t5"]) await raw(server, other, "PUT", `/threads/${id}/messages/n-${id}`, { text: "new" });
        assert.ok((await client.sync()).replaced.includes("threads"));
        await raw(server, other, "DELETE", "/threads/t4");
        await client.sync();
        assert.ok((await client.items("threads")).length >= 2);

        // A conflict merged, journaled, undone; a field both changed, kept by the handler.
        await client.put("contacts", "c1", { firstName: "Ann", lastName: "Lee", notes: "base" });
        await client.push();
        await raw(server, other, "PATCH", "/contacts/c1", { lastName: "Li", notes: "theirs" });
        await client.save("contacts", { ...(await client.item("contacts", "c1"))!, firstName: "Anna", notes: "mine" });
        assert.equal((await client.push()).conflicts, 1);
        const journal = await client.conflictJournal();
        assert.equal(journal.length, 1);
        await client.undo(journal[0]!);
        await client.push();
        await client.clearConflictJournal();

        // Refused writes, deletes, a patch folded into a put.
        await client.put("contacts", "bad", { firstName: "X", nick: "unknown field" });
        await client.put("contacts", "c2", { firstName: "B" });
        await client.patch("contacts", "c2", { lastName: "C" });
        await client.delete("contacts", "c1");
        await client.put("contacts", "gone", { firstName: "never pushed" });
        await client.delete("contacts", "gone");
        assert.deepEqual((await client.push()).failed, 1);
        assert.equal((await client.failedOperations()).length, 1);
        await client.clearFailedOperations();
        await client.sync();
        assert.deepEqual((await client.items("contacts")).map((item) => item.id), ["c2"]);
        await client.logOut();
        assert.deepEqual(await client.items("contacts"), []);
    } finally {
        try {
            await client.close();
            await storage.close();
        } finally {
            await server.stop();
        }
    }
});

test("texts sort as SQLite's BINARY collation sorts them (UTF-8 bytes), not as UTF-16 code units", () => {
    const texts = ["b", "a", "", "ab", "\uffff", "\u{1F600}", "\ue000", "é"];
    const sorted = [...texts].sort(compareText);
    const utf8 = (value: string): number[] => [...new TextEncoder().encode(value)];
    const bytes = [...texts].sort((x, y) => {
        const [a, b] = [utf8(x), utf8(y)];
        for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
        return a.length - b.length;
    });
    assert.deepEqual(sorted, bytes);
});

/** The client's sources: Clients/ts/src from dist/test/storage, or $TS_CLIENT_SOURCES (a build elsewhere). */
function sources(): string {
    return process.env.TS_CLIENT_SOURCES ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../src");
}

test("every SQL statement written in the client's sources is in the statement table (the IndexedDB driver runs them all)", () => {
    const folder = sources();
    assert.ok(existsSync(folder), `no sources at ${folder}`);
    const unknown: string[] = [];
    let count = 0;
    for (const file of readdirSync(folder).filter((name) => name.endsWith(".ts") && name !== "schema.ts")) {
        const source = readFileSync(join(folder, file), "utf8");
        // String literals that start as a statement; templates with substitutions are covered by their expansions.
        for (const match of source.matchAll(/(["`])((?:SELECT|INSERT|UPDATE|DELETE) [^"`]*)\1/g)) {
            const sql = match[2]!;
            if (sql.includes("${")) continue;
            for (const statement of sql.split(";").filter((part) => part.trim() !== "")) {
                count++;
                if (!knowsStatement(statement)) unknown.push(`${file}: ${statement.replace(/\s+/g, " ").trim()}`);
            }
        }
    }
    assert.ok(count > 40, `only ${count} statements found`);
    assert.deepEqual(unknown, []);
});
