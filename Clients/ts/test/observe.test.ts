// Observation and status against the real server: a collection's listener hears its items at once, then after each
// write or sync that changed them, and only then; the status follows syncs, pushes, counts and failures.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { JsonObject, SyncClientError, SyncStatus } from "../src/index.js";
import { openClient, username } from "./support/clients.js";
import { next, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

test("observeItems: the items at once, then after each change of the collection, never for another collection nor an empty sync", async () => {
    const ann = await openClient(server);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        const contacts: string[][] = [];
        const events: string[][] = [];
        const stopContacts = ann.client.observeItems("contacts", (items) => contacts.push(items.map((item) => String(item.id))));
        // The events' listener is the clock: by the time it hears a write, the contacts' listener was asked too.
        let heard: ((items: JsonObject[]) => void) | undefined;
        ann.client.observeItems("events", (items) => {
            events.push(items.map((item) => String(item.id)));
            heard?.(items);
        });
        const eventsHeard = (count: number): Promise<JsonObject[]> =>
            next<JsonObject[]>(
                (listener) => {
                    heard = listener;
                    return () => (heard = undefined);
                },
                `${count} events`,
                (items) => items.length === count
            );
        await eventsHeard(0);
        assert.deepEqual(contacts, [[]]);

        await ann.client.save("contacts", { id: "c1", firstName: "Ann" });
        assert.deepEqual(contacts, [[], ["c1"]], "told when the write returns");
        await ann.client.save("events", { id: "e1", title: "Dinner", start: "2026-05-01T19:00:00Z" });
        assert.deepEqual(contacts, [[], ["c1"]], "a write to another collection tells nothing");
        assert.deepEqual(events, [[], ["e1"]]);

        // The push lands: the item becomes the server's (its `modified`, its defaults), which the listener hears.
        await ann.client.push();
        assert.deepEqual(contacts, [[], ["c1"], ["c1"]]);
        await ann.client.sync();
        assert.equal(contacts.length, 3, "a sync that changes nothing tells nothing");

        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/c2", { firstName: "Bob" });
        await raw(server, other, "PUT", "/places/p1", { name: "Home" });
        await ann.client.sync();
        assert.deepEqual(contacts, [[], ["c1"], ["c1"], ["c1", "c2"]]);
        assert.equal(events.length, 3, "the sync changed no event");

        stopContacts();
        await ann.client.delete("contacts", "c2");
        assert.equal(contacts.length, 4, "a stopped listener hears nothing");
    } finally {
        await ann.close();
    }
});

test("the status: signed in, syncing then idle with the sync's time, pending and failed counts, offline while the network is down", async () => {
    let down = false;
    const ann = await openClient(server, {
        fetch: (input, init) => (down ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init)),
    });
    const seen: SyncStatus[] = [];
    const stop = ann.client.onStatus((status) => seen.push(status));
    try {
        assert.equal(seen.length, 1, "the status now, at once");
        assert.equal(seen[0]!.signedIn, false);
        await ann.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        assert.equal(ann.client.status.signedIn, true);
        await ann.client.sync();
        const states = seen.map((status) => status.state);
        assert.deepEqual(states.slice(states.indexOf("syncing")), ["syncing", "idle"]);
        assert.ok(ann.client.status.lastSuccessfulSync instanceof Date);

        await ann.client.save("contacts", { id: "c1", firstName: "Ann" });
        assert.equal(ann.client.status.pendingWrites, 1);
        await ann.client.save("contacts", { id: "bad", firstName: 42 as unknown as string });
        await ann.client.push();
        assert.equal(ann.client.status.pendingWrites, 0);
        assert.equal(ann.client.status.failedWrites, 1);
        await ann.client.clearFailedOperations();
        assert.equal(ann.client.status.failedWrites, 0);

        down = true;
        const failed = await ann.client.sync().catch((error: unknown) => error);
        assert.ok(failed instanceof SyncClientError && failed.kind === "offline");
        assert.equal(ann.client.status.state, "offline");
        assert.equal(ann.client.status.lastError?.kind, "offline");
        down = false;
        await ann.client.sync();
        assert.equal(ann.client.status.state, "idle");
        assert.equal(ann.client.status.lastError, undefined);
        // Each value differs from the one before: only changes are told.
        for (let index = 1; index < seen.length; index++) assert.notDeepEqual(seen[index], seen[index - 1]);
    } finally {
        stop();
        await ann.close();
    }
});
