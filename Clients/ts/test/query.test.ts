// Typed queries with the types `syncapi model typescript` generated from the default model (scripts/check-ts-client
// writes test/generated/family.ts with this build's binary before compiling: a field name the model does not have is
// a compile error here). Filter, sort, limit, count, and observe against the real server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { compare, ServerModel, typed } from "../src/index.js";
import type { Contact, Event, FamilyCollections } from "./generated/family.js";
import { familyModel } from "./generated/family.js";
import { openClient, username } from "./support/clients.js";
import { raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

test("the generated model is the served one: its digest, collections, kinds and endpoints", async () => {
    const served = ServerModel.parse(await (await fetch(`${server.url}/api/v1/model`)).text());
    assert.equal(familyModel.digest, served.digest);
    const generated = familyModel.collections as Record<string, { kind: string; sync?: string }>;
    // The served model adds `accounts` (the members' public profiles, read-only): not a collection of the file.
    const declared = [...served.collections].filter(([, collection]) => !collection.readOnly);
    assert.deepEqual(Object.keys(generated).sort(), declared.map(([name]) => name).sort());
    for (const [name, collection] of declared) {
        assert.equal(generated[name]?.kind, collection.kind, name);
        assert.equal(generated[name]?.sync, collection.sync, name);
    }
});

test("typed queries filter, sort, limit and count the replica's items by field", async () => {
    const opened = await openClient(server);
    try {
        await opened.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        const db = typed<FamilyCollections>(opened.client);
        const contacts: Contact[] = [
            { id: "c1", firstName: "Ann", lastName: "Smith", emails: ["ann@example.com"] },
            { id: "c2", firstName: "Bob", lastName: "Jones", emails: [] },
            { id: "c3", firstName: "Cid", emails: ["cid@example.com", "c@example.com"] },
            { id: "c4", lastName: "Adams" },
        ];
        for (const contact of contacts) await db.save("contacts", contact);
        const events: Event[] = [
            { id: "e1", title: "Dinner", start: "2026-05-01T19:00:00Z" },
            { id: "e2", title: "Lunch", start: "2026-04-01T12:00:00Z", allDay: false },
            { id: "e3", title: "Trip", start: "2026-06-01T00:00:00Z", allDay: true },
        ];
        for (const event of events) await db.save("events", event);
        await opened.client.sync();

        const ids = (rows: { id: string }[]): string[] => rows.map((row) => row.id);
        assert.deepEqual(ids(await db.query("contacts").orderBy("firstName").all()), ["c4", "c1", "c2", "c3"], "a missing field sorts first");
        assert.deepEqual(ids(await db.query("contacts").orderBy("firstName", "desc").limit(2).all()), ["c3", "c2"]);
        assert.deepEqual(ids(await db.query("contacts").where("emails", "contains", "cid@example.com").all()), ["c3"]);
        assert.deepEqual(ids(await db.query("contacts").where("lastName", "==", null).orderBy("id").all()), ["c3"]);
        assert.deepEqual(ids(await db.query("contacts").where("firstName", "in", ["Ann", "Cid"]).orderBy("id").all()), ["c1", "c3"]);
        assert.equal(await db.query("contacts").where("firstName", "!=", "Ann").count(), 3);
        // RFC 3339 dates compare as their text: in time order.
        assert.deepEqual(ids(await db.query("events").where("start", ">=", "2026-05-01T00:00:00Z").orderBy("start").all()), ["e1", "e3"]);
        // A default the server filled in (allDay: false) is a value like any other after the sync.
        assert.deepEqual(ids(await db.query("events").where("allDay", "==", false).orderBy("id").all()), ["e1", "e2"]);
        assert.equal((await db.query("events").orderBy("start").first())?.title, "Lunch");
        assert.equal(await db.query("events").limit(0).count(), 0);
    } finally {
        await opened.close();
    }
});

test("observe: the query's items at once, then only when they change, not when other items of the collection do", async () => {
    const opened = await openClient(server);
    try {
        const name = username("bea");
        await opened.client.signUp({ family: "Brown", username: name, password: "password1" });
        const db = typed<FamilyCollections>(opened.client);
        const heard: string[][] = [];
        let wake: (() => void) | undefined;
        const stop = db
            .query("contacts")
            .where("firstName", "==", "Ann")
            .orderBy("id")
            .observe((rows) => {
                heard.push(rows.map((row) => row.id));
                wake?.();
            });
        const nextHeard = (count: number): Promise<void> =>
            new Promise((resolve) => {
                if (heard.length >= count) return resolve();
                wake = () => {
                    if (heard.length >= count) resolve();
                };
            });
        await nextHeard(1);
        assert.deepEqual(heard, [[]]);
        await db.save("contacts", { id: "a1", firstName: "Ann" });
        await nextHeard(2);
        assert.deepEqual(heard[1], ["a1"]);
        // Pushed: the item becomes the server's (its `modified`), a change of what the query shows.
        await opened.client.sync();
        const afterPush = heard.length;
        // Another contact that does not match: the collection changed, the query's items did not (a write returns
        // once its observers were told).
        await db.save("contacts", { id: "b1", firstName: "Bob" });
        await opened.client.sync();
        assert.equal(heard.length, afterPush, "nothing heard for an item the query does not show");
        // Another device's write that matches arrives with a sync.
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/a2", { firstName: "Ann" });
        await opened.client.sync();
        await nextHeard(afterPush + 1);
        assert.deepEqual(heard.at(-1), ["a1", "a2"]);
        stop();
    } finally {
        await opened.close();
    }
});

test("compare orders JSON values: missing and null, booleans, numbers, strings", () => {
    const values = ["b", 2, null, true, "a", 10, false];
    assert.deepEqual([...values].sort(compare), [null, false, true, 2, 10, "a", "b"]);
    assert.equal(compare(undefined, null), 0);
});
