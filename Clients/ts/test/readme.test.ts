// README.md's TypeScript blocks are the regions of the example files, verbatim and in order, and those functions work
// against a real server (getting-started and typed queries here; the live, spaces, media, React Native and web
// examples in test/examples.test.ts).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { allThreads, firstSync, keepBothNotes, message, openAppClient, refusedWrites } from "../examples/getting-started.js";
import { agenda, followBrowns } from "../examples/typed-queries.js";
import { openClient, username } from "./support/clients.js";
import { eventually, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** A source file of the package (this test runs from dist/test). */
function source(path: string): string {
    return readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");
}

/** The example files in the order README.md shows them. */
const examples = ["getting-started", "typed-queries", "react-native", "web"];

/** The `// #region NAME … // #endregion NAME` regions of a source text, in order. */
function regions(text: string): { name: string; body: string }[] {
    return [...text.matchAll(/\/\/ #region (\S+)\n([\s\S]*?)\/\/ #endregion \1\n/g)].map((match) => ({ name: match[1]!, body: match[2]! }));
}

test("every TypeScript block of README.md is a region of the example files, in order, and every region is in the README", () => {
    const readme = source("README.md");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
    // Every example file with regions is listed, and every `#region` line opens a region that closes.
    const withRegions = readdirSync(fileURLToPath(new URL("../../examples", import.meta.url)))
        .filter((file) => file.endsWith(".ts") && source(`examples/${file}`).includes("// #region "))
        .map((file) => file.replace(/\.ts$/, ""));
    assert.deepEqual([...withRegions].sort(), [...examples].sort());
    const expected: string[] = [];
    const names = new Set<string>();
    for (const example of examples) {
        const text = source(`examples/${example}.ts`);
        const found = regions(text);
        assert.ok(found.length >= 1, example);
        assert.equal(found.length, text.split("// #region ").length - 1, `${example}: a #region without its #endregion`);
        for (const { name, body } of found) {
            assert.ok(!names.has(name), `region ${name} twice`);
            names.add(name);
            expected.push(body);
        }
    }
    assert.ok(expected.length >= 13);
    assert.equal(blocks.length, expected.length, "as many ts blocks as regions");
    for (const [index, block] of blocks.entries()) assert.equal(block, expected[index], `block ${index + 1} of README.md`);
});

test("the typed queries block runs: a typed save, filtered and sorted events, a count of unnamed contacts, an observed query", async () => {
    const opened = await openClient(server);
    try {
        const name = username("typed");
        await opened.client.signUp({ family: "Brown", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/events/e1", { title: "Dinner", start: "2026-05-01T19:00:00Z" });
        await raw(server, other, "PUT", "/events/e2", { title: "Lunch", start: "2026-04-28T12:00:00Z" });
        await raw(server, other, "PUT", "/events/e3", { title: "Trip", start: "2026-05-09T08:00:00Z" });
        await raw(server, other, "PUT", "/contacts/x", { lastName: "Nobody" });
        await opened.client.sync();

        let heard: string[][] = [];
        const stop = followBrowns(opened.client, (names) => heard.push(names));
        const { events, unnamed } = await agenda(opened.client, "2026-04-28T00:00:00Z", "2026-05-05T00:00:00Z");
        assert.deepEqual(events.map((event) => event.title), ["Lunch", "Dinner"]);
        assert.equal(unnamed, 1);
        await eventually("Bea heard", () => heard.some((names) => names.includes("Bea")));
        await opened.client.sync(); // Bea pushed (the server's `modified` comes back with her)
        // Another Brown arrives with a sync: heard once.
        heard = [];
        await raw(server, other, "PUT", "/contacts/c9", { firstName: "Abe", lastName: "Brown", emails: ["bea@example.com"] });
        await opened.client.sync();
        await eventually("Abe heard", () => heard.length > 0);
        assert.deepEqual(heard, [["Abe", "Bea"]]);
        // A contact the query does not show changes: nothing is heard; the next Brown written here is.
        heard = [];
        await raw(server, other, "PUT", "/contacts/x", { lastName: "Still nobody" });
        await opened.client.sync();
        await opened.client.save("contacts", { id: "c10", firstName: "Cat", lastName: "Brown", emails: ["bea@example.com"] });
        await eventually("Cat heard", () => heard.length > 0);
        assert.deepEqual(heard, [["Abe", "Bea", "Cat"]]);
        stop();
    } finally {
        await opened.close();
    }
});

test("the getting-started runs: sign up, write, sync, read; pages; errors by kind and code; refusals; a conflict handler", async () => {
    const path = server.path("app.sqlite");
    const name = username("app");
    let { client, storage } = await openAppClient(server.url, path);
    try {
        assert.deepEqual(await firstSync(client, name), ["Smith", "Ann"]);
        // Opened again: still signed in, the replica kept; the same saves change nothing.
        await client.close();
        await storage.close();
        ({ client, storage } = await openAppClient(server.url, path));
        assert.ok(client.isSignedIn);
        assert.deepEqual(await firstSync(client, name), ["Smith", "Ann"]);
        assert.deepEqual(await client.pendingOperations(), []);

        const other = await rawLogIn(server, name, "correct horse");
        for (const id of ["t1", "t2"]) await raw(server, other, "PUT", `/threads/${id}`, { title: id });
        await client.sync();
        assert.deepEqual(await allThreads(client), ["t2", "t1"]);

        const second = await openAppClient(server.url, server.path("second.sqlite"));
        try {
            const taken = await second.client.signUp({ family: "Other", username: name, password: "correct horse" }).catch((error: unknown) => error);
            assert.equal(message(taken), "That username is taken.");
            const wrong = await second.client.logIn({ username: name, password: "wrong horse" }).catch((error: unknown) => error);
            assert.equal(message(wrong), "Wrong username or password.");
        } finally {
            await second.client.close();
            await second.storage.close();
        }

        await client.put("contacts", "bad", { nickname: "x" });
        await client.sync();
        assert.deepEqual(await refusedWrites(client), ["put contacts/bad: 400 unknown_field"]);
        assert.deepEqual(await client.failedOperations(), []);

        keepBothNotes(client);
        await client.put("contacts", "ann", { ...(await client.item("contacts", "ann"))!, notes: "base" });
        await client.push();
        await raw(server, other, "PATCH", "/contacts/ann", { notes: "theirs" });
        await client.save("contacts", { ...(await client.item("contacts", "ann"))!, notes: "mine" });
        await client.push();
        assert.equal((await raw(server, other, "GET", "/contacts/ann")).body.notes, "theirs\nmine");
    } finally {
        await client.close();
        await storage.close();
    }
});
