// Verify and repair (protocol §11) against the real server: the replica's digests are the server's and the Swift
// SDK's, a replica that lost a row or holds a changed version is repaired (local edits kept), and the
// SHA-256 is the standard one.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { localDigests, sha256Hex } from "../src/index.js";
import { openClient, swiftClient, username } from "./support/clients.js";
import { raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** A family with contacts, an event, a place, a member and 8 threads written by another device; its token. */
async function filledFamily(name: string): Promise<string> {
    const other = await rawLogIn(server, name);
    for (let i = 0; i < 5; i++) assert.equal((await raw(server, other, "PUT", `/contacts/c${i}`, { firstName: `C${i}` })).status, 200);
    assert.equal((await raw(server, other, "PUT", "/events/e1", { title: "Fair", start: "2026-07-01T10:00:00Z" })).status, 200);
    assert.equal((await raw(server, other, "PUT", "/places/p1", { name: "Park" })).status, 200);
    assert.equal((await raw(server, other, "PUT", "/members/m1", { name: "Ann", role: "parent" })).status, 200);
    for (let i = 0; i < 8; i++) assert.equal((await raw(server, other, "PUT", `/threads/t${i}`, { title: `T${i}` })).status, 200);
    return other;
}

test("SHA-256: the standard digests (empty, abc, two blocks)", () => {
    const text = (value: string): Uint8Array => new TextEncoder().encode(value);
    assert.equal(sha256Hex(text("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(sha256Hex(text("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(
        sha256Hex(text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
});

test("an exact replica: verify checks every list (the held part of a paginated one) and the digests are the server's and the Swift SDK's", async () => {
    const ann = await openClient(server, { pageSize: 5 });
    try {
        const name = username("ver");
        await ann.client.signUp({ family: "Verify", username: name, password: "password1" });
        const other = await filledFamily(name);
        await ann.client.sync();
        const report = await ann.client.verify();
        assert.deepEqual(report, { checked: ["contacts", "events", "members", "places", "threads"], repaired: [], date: report.date, exact: true });
        assert.equal(report.date, await ann.client.syncDate());
        // The held part of the threads is the top 5 (t7…t3): the server's digest of the list from t3 up.
        const answer = await raw(server, other, "GET", "/verify?threadsLastId=t3");
        const mine = await localDigests(ann.storage, ["contacts", "events", "members", "places", "threads"]);
        assert.deepEqual(mine, answer.body.lists);
        assert.equal(mine.threads?.count, 5);
    } finally {
        await ann.close();
    }
    const swift = await swiftClient(server, ann.replicaPath, ["verify", "--json"]);
    assert.equal(swift.code, 0, swift.stderr);
    assert.deepEqual(JSON.parse(swift.stdout).repaired, []);
});

test("a replica that lost a row and holds a changed version is repaired: only the lists that differ, local edits kept", async () => {
    const ann = await openClient(server);
    try {
        const name = username("rep");
        await ann.client.signUp({ family: "Repair", username: name, password: "password1" });
        await filledFamily(name);
        await ann.client.sync();
        await ann.storage.run("DELETE FROM items WHERE collection = 'events' AND id = 'e1'");
        await ann.storage.run("UPDATE items SET server = json_set(server, '$.modified', '2000-01-01T00:00:00.000Z') WHERE collection = 'contacts' AND id = 'c1'");
        await ann.client.patch("contacts", "c2", { notes: "unsent" });
        const report = await ann.client.verify();
        assert.deepEqual(report.repaired, ["contacts", "events"]);
        assert.equal(report.exact, false);
        assert.equal((await ann.client.item("events", "e1"))?.title, "Fair");
        assert.equal((await ann.client.item("contacts", "c2"))?.notes, "unsent");
        // The verifying sync pushed the edit first, as every sync does.
        assert.deepEqual(await ann.client.pendingOperations(), []);
        const again = await ann.client.verify();
        assert.deepEqual(again.repaired, []);
    } finally {
        await ann.close();
    }
});
