// Writes against the real server: the queue leaving by itself (debounced, folded, after an outage on `online`),
// typed saves as PATCH with If-Match, a 412 merged field by field and journaled, refusals in failed operations.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ConflictRecord, SyncClientError, SyncReport } from "../src/index.js";
import { openClient, recordingFetch, username } from "./support/clients.js";
import { next, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

test("writes leave by themselves: a burst is one push, folded per item (create + delete is nothing)", async () => {
    const ann = await openClient(server, { pushDelayMs: 30 });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const pushed = next<SyncReport>((listener) => ann.client.on("pushed", listener), "pushed");
        await ann.client.put("contacts", "c1", { firstName: "A" });
        await ann.client.put("contacts", "c1", { firstName: "Ann" });
        await ann.client.put("contacts", "c2", { firstName: "Gone" });
        await ann.client.delete("contacts", "c2");
        assert.deepEqual(
            (await ann.client.pendingOperations()).map((op) => [op.id, op.kind]),
            [["c1", "put"]]
        );
        assert.deepEqual((await ann.client.items("contacts")).map((contact) => contact.firstName), ["Ann"], "applied locally at once");
        const report = await pushed;
        assert.equal(report.pushed, 1);
        const other = await rawLogIn(server, name);
        assert.equal((await raw(server, other, "GET", "/contacts/c1")).body.firstName, "Ann");
        assert.equal((await raw(server, other, "GET", "/contacts/c2")).status, 404);
        assert.deepEqual(await ann.client.pendingOperations(), []);
    } finally {
        await ann.close();
    }
});

test("a write made while the server is down stays queued, and leaves when the network is back (`online`)", async () => {
    const outage = await TestServer.start();
    const online = new EventTarget();
    // Backoff far longer than the test: only the `online` event can make the write leave in time.
    const ann = await openClient(outage, {
        pushDelayMs: 10,
        onlineEvents: online,
        retryPolicy: { attempts: 1, baseDelayMs: 600_000, maximumDelayMs: 600_000 },
        maximumPushBackoffMs: 600_000,
    });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        await outage.kill();
        const failed = next<SyncClientError>((listener) => ann.client.on("pushError", listener), "pushError");
        await ann.client.put("contacts", "c1", { firstName: "Offline" });
        const error = await failed;
        assert.equal(error.kind, "offline");
        assert.equal((await ann.client.pendingOperations()).length, 1);
        assert.equal((await ann.client.item("contacts", "c1"))?.firstName, "Offline");

        await outage.launch();
        const pushed = next<SyncReport>((listener) => ann.client.on("pushed", listener), "pushed");
        online.dispatchEvent(new Event("online"));
        assert.equal((await pushed).pushed, 1);
        assert.deepEqual(await ann.client.pendingOperations(), []);
        const other = await rawLogIn(outage, name);
        assert.equal((await raw(outage, other, "GET", "/contacts/c1")).body.firstName, "Offline");
    } finally {
        await ann.close();
        await outage.stop();
    }
});

test("a typed save is a PATCH of the changed fields with If-Match: a field the app does not know is never erased", async () => {
    const wire = recordingFetch();
    const ann = await openClient(server, { fetch: wire.fetch });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/c1", { firstName: "Ann", notes: "allergic to nuts" });
        await ann.client.sync();
        // An app whose model has no `notes` saves what it decoded.
        await ann.client.save("contacts", { id: "c1", firstName: "Anna", lastName: null, emails: [], phones: [] });
        assert.deepEqual(
            (await ann.client.pendingOperations()).map((op) => [op.kind, op.body]),
            [["patch", { firstName: "Anna" }]]
        );
        assert.equal((await ann.client.push()).pushed, 1);
        // Pulled by a sync (whose answers carry no ETag): its ETag read first, then the patch sent with it.
        const sent = wire.sent.filter((request) => request.url === "/api/v1/contacts/c1");
        assert.deepEqual(
            sent.map((request) => [request.method, request.status]),
            [
                ["GET", 200],
                ["PATCH", 200],
            ]
        );
        assert.match(sent[1]!.headers["If-Match"] ?? "", /^"\d+"$/);
        assert.deepEqual(sent[1]!.body, { firstName: "Anna" });
        const stored = (await raw(server, other, "GET", "/contacts/c1")).body;
        assert.equal(stored.firstName, "Anna");
        assert.equal(stored.notes, "allergic to nuts");
        // Saving the same state again changes nothing, so queues nothing.
        await ann.client.save("contacts", (await ann.client.item("contacts", "c1"))!);
        assert.deepEqual(await ann.client.pendingOperations(), []);
    } finally {
        await ann.close();
    }
});

test("a 412 is merged field by field and journaled; a field both changed keeps the server's value unless the handler says", async () => {
    const wire = recordingFetch();
    const ann = await openClient(server, { fetch: wire.fetch });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        await ann.client.put("contacts", "c1", { firstName: "Ann", lastName: "Lee", notes: "base" });
        await ann.client.push();
        // Another device changes the last name; this one the first name, on a base whose ETag it knows: 412.
        await raw(server, other, "PATCH", "/contacts/c1", { lastName: "Li" });
        const conflict = next<ConflictRecord>((listener) => ann.client.on("conflict", listener), "conflict");
        await ann.client.save("contacts", { ...(await ann.client.item("contacts", "c1"))!, firstName: "Anna" });
        const report = await ann.client.push();
        assert.equal(report.conflicts, 1);
        assert.equal(report.pushed, 1);
        assert.equal((await conflict).resolution, "merged");
        // The patch met a 412; the merge went again with the server's new ETag.
        assert.deepEqual(
            wire.sent.filter((request) => request.url === "/api/v1/contacts/c1").map((request) => [request.method, request.status]),
            [
                ["PUT", 200],
                ["PATCH", 412],
                ["PUT", 200],
            ]
        );
        let stored = (await raw(server, other, "GET", "/contacts/c1")).body;
        assert.deepEqual([stored.firstName, stored.lastName, stored.notes], ["Anna", "Li", "base"]);
        let journal = await ann.client.conflictJournal();
        assert.equal(journal.length, 1);
        assert.deepEqual([journal[0]!.resolution, journal[0]!.fields, journal[0]!.itemId], ["merged", [], "c1"]);
        assert.equal(journal[0]!.base?.lastName, "Lee");
        assert.equal(journal[0]!.server?.lastName, "Li");
        assert.equal(journal[0]!.result?.firstName, "Anna");
        assert.deepEqual(await ann.client.item("contacts", "c1"), stored);

        // Both change the notes: the server's value is kept there, the rest of the local edit too.
        await raw(server, other, "PATCH", "/contacts/c1", { notes: "theirs" });
        await ann.client.save("contacts", { ...(await ann.client.item("contacts", "c1"))!, notes: "mine", lastName: "Lee-Li" });
        await ann.client.push();
        stored = (await raw(server, other, "GET", "/contacts/c1")).body;
        assert.deepEqual([stored.notes, stored.lastName], ["theirs", "Lee-Li"]);
        journal = await ann.client.conflictJournal();
        assert.deepEqual([journal[1]!.resolution, journal[1]!.fields], ["serverKeptFields", ["notes"]]);
        // Undo puts the local edit back.
        await ann.client.undo(journal[1]!);
        await ann.client.push();
        assert.equal((await raw(server, other, "GET", "/contacts/c1")).body.notes, "mine");

        // The collection's handler decides a field both changed.
        ann.client.setConflictHandler("contacts", (versions) => {
            assert.equal(versions.local?.notes, "mine again");
            assert.equal(versions.server?.notes, "theirs again");
            return "keepLocal";
        });
        await raw(server, other, "PATCH", "/contacts/c1", { notes: "theirs again" });
        await ann.client.save("contacts", { ...(await ann.client.item("contacts", "c1"))!, notes: "mine again" });
        await ann.client.push();
        assert.equal((await raw(server, other, "GET", "/contacts/c1")).body.notes, "mine again");
        assert.equal((await ann.client.conflictJournal()).at(-1)?.resolution, "keptLocal");
        await ann.client.clearConflictJournal();
        assert.deepEqual(await ann.client.conflictJournal(), []);
    } finally {
        await ann.close();
    }
});

test("a write refused for good moves to failed operations with the server's code, is undone locally, and never blocks the queue", async () => {
    const ann = await openClient(server);
    try {
        await ann.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        await ann.client.sync();
        const refusals: string[] = [];
        ann.client.on("refused", (operation) => refusals.push(operation.code));
        await ann.client.put("contacts", "bad", { firstName: "X", nick: "unknown field" });
        await ann.client.put("messages", "m1", { text: "hello" }, { parent: "no-such-thread" });
        await ann.client.put("contacts", "good", { firstName: "Fine" });
        const report = await ann.client.push();
        assert.deepEqual([report.pushed, report.failed], [1, 2]);
        const failed = await ann.client.failedOperations();
        assert.deepEqual(
            failed.map((op) => [op.collection, op.id, op.kind, op.status, op.code]),
            [
                ["contacts", "bad", "put", 400, "unknown_field"],
                ["messages", "m1", "put", 404, "not_found"],
            ]
        );
        assert.equal(failed[1]!.parent, "no-such-thread");
        assert.deepEqual(failed[0]!.body, { firstName: "X", id: "bad", nick: "unknown field" });
        assert.deepEqual(refusals, ["unknown_field", "not_found"]);
        assert.deepEqual(await ann.client.pendingOperations(), []);
        assert.deepEqual((await ann.client.items("contacts")).map((contact) => contact.id), ["good"], "the refused write is undone");
        // Never retried: the next push has nothing to do.
        assert.deepEqual([(await ann.client.push()).pushed, (await ann.client.push()).failed], [0, 0]);
        await ann.client.clearFailedOperations();
        assert.deepEqual(await ann.client.failedOperations(), []);
        await assert.rejects(ann.client.put("accounts", "x", {}), (error: unknown) => error instanceof SyncClientError && error.kind === "invalid");
        await assert.rejects(ann.client.put("messages", "m2", { text: "x" }), (error: unknown) => error instanceof SyncClientError && error.kind === "invalid");
    } finally {
        await ann.close();
    }
});

test("a server whose limits went down: a refused group is split to fit the new limits, a write alone over the body limit is refused", async () => {
    const lowered = await TestServer.start();
    const ann = await openClient(lowered);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        assert.equal((await ann.client.limits()).groupMaxRequests, 20, "kept from the sign-in");
        // The operator lowers the limits; the client still holds the old ones.
        await lowered.kill();
        await lowered.launch(["--group-max-requests", "2", "--body-max-bytes", "8192"]);
        for (const id of ["c1", "c2", "c3", "c4", "c5"]) await ann.client.put("contacts", id, { firstName: id });
        await ann.client.put("contacts", "big", { firstName: "Big", notes: "x".repeat(9000) });
        const report = await ann.client.push();
        assert.deepEqual([report.pushed, report.failed], [5, 1]);
        assert.deepEqual(await ann.client.limits(), { bodyMaxBytes: 8192, groupMaxRequests: 2, maxChildren: 100, nbMax: 500 });
        assert.deepEqual(
            (await ann.client.failedOperations()).map((op) => [op.id, op.status, op.code]),
            [["big", 413, "payload_too_large"]]
        );
        const other = await rawLogIn(lowered, name);
        assert.equal((await raw(lowered, other, "GET", "/contacts/c5")).status, 200);
        // A sync needs more calls than a group now takes: said before any request.
        await assert.rejects(ann.client.sync(), (error: unknown) => error instanceof SyncClientError && error.kind === "invalid");
    } finally {
        await ann.close();
        await lowered.stop();
    }
});
