// README.md's code blocks are the regions of examples/getting-started.ts, verbatim, and those functions work against
// a real server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { allThreads, firstSync, keepBothNotes, message, openAppClient, refusedWrites } from "../examples/getting-started.js";
import { username } from "./support/clients.js";
import { raw, rawLogIn, TestServer } from "./support/server.js";

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

test("every TypeScript block of README.md is a region of examples/getting-started.ts, and every region is in the README", () => {
    const readme = source("README.md");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
    const example = source("examples/getting-started.ts");
    const regions = [...example.matchAll(/\/\/ #region (\S+)\n([\s\S]*?)\/\/ #endregion \1\n/g)].map((match) => match[2]!);
    assert.ok(regions.length >= 5);
    assert.deepEqual(blocks, regions);
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
