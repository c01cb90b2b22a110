// Sync against the real server: an empty then filled replica, deltas with changes and deletes, a paginated list whose
// hole a crop closes, singletons and bundles, every collection of a served model, and the replica file shared with
// the Swift SDK's tools.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { JsonObject, SyncClientError } from "../src/index.js";
import { openClient, swiftClient, username } from "./support/clients.js";
import { raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** The server's live items of a full list, by id (what an exact replica holds). */
async function serverList(token: string, endpoint: string, collection: string): Promise<JsonObject[]> {
    const answer = await raw(server, token, "GET", `/${endpoint}`);
    const items = (answer.body[collection] ?? answer.body).updated ?? answer.body.updated;
    return (items as JsonObject[]).sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1));
}

/** The server's paginated list, in its order (ids). */
async function serverOrder(token: string, list: string): Promise<string[]> {
    const answer = await raw(server, token, "GET", `/${list}?nb=500&max${list === "threads" ? "messages" : "comments"}=0`);
    return (answer.body.items as JsonObject[]).map((item) => item.id as string);
}

test("sync of an empty replica, then of a filled one: every collection replaced, then the other device's items arrive", async () => {
    const ann = await openClient(server);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const first = await ann.client.sync();
        assert.deepEqual(first.replaced.sort(), ["accounts", "contacts", "events", "family", "members", "places", "settings", "threads", "wall"]);
        assert.ok(first.date);
        assert.equal(await ann.client.syncDate(), first.date);
        assert.deepEqual(await ann.client.items("contacts"), []);
        assert.equal((await ann.client.singleton("family"))?.name, "Smith");
        assert.equal((await ann.client.singleton("settings"))?.notifications, true);
        assert.deepEqual((await ann.client.items("accounts")).map((account) => account.username), [name]);
        assert.ok(await ann.client.hasAll("threads"));

        const other = await rawLogIn(server, name);
        assert.equal((await raw(server, other, "PUT", "/contacts/c2", { lastName: "Lee", emails: ["lee@example.com"] })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/contacts/c1", { firstName: "Ann" })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/events/e1", { title: "Dinner", start: "2026-05-01T19:00:00Z" })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/places/p1", { name: "Home", latitude: 48.85 })).status, 200);
        const second = await ann.client.sync();
        // A delta replaces nothing (the paginated lists, which hold nothing, are asked without a date: §4).
        assert.deepEqual(second.replaced, ["threads", "wall"]);
        assert.notEqual(second.date, first.date);
        assert.deepEqual(await ann.client.items("contacts"), await serverList(other, "ctcsync", "contacts"));
        assert.deepEqual(await ann.client.items("events"), await serverList(other, "evtsync", "events"));
        assert.deepEqual(await ann.client.items("places"), await serverList(other, "plcsync", "places"));
        assert.equal(await ann.client.heldCount("contacts"), 2);
    } finally {
        await ann.close();
    }
});

test("a delta after changes and deletes: changed items replaced, deleted ones gone, the rest untouched, one date", async () => {
    const ann = await openClient(server);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        for (const id of ["c1", "c2", "c3"]) await raw(server, other, "PUT", `/contacts/${id}`, { firstName: id });
        await raw(server, other, "PUT", "/events/e1", { title: "A", start: "2026-05-01T19:00:00Z" });
        await ann.client.sync();
        assert.equal((await ann.client.items("contacts")).length, 3);
        await raw(server, other, "PUT", "/contacts/c1", { firstName: "c1", lastName: "Changed" });
        await raw(server, other, "DELETE", "/contacts/c2");
        await raw(server, other, "DELETE", "/events/e1");
        await raw(server, other, "PUT", "/contacts/c4", { firstName: "c4" });
        const delta = await ann.client.sync();
        assert.deepEqual(delta.replaced, ["threads", "wall"]);
        const contacts = await ann.client.items("contacts");
        assert.deepEqual(contacts.map((contact) => contact.id), ["c1", "c3", "c4"]);
        assert.equal(contacts[0]!.lastName, "Changed");
        assert.deepEqual(contacts, await serverList(other, "ctcsync", "contacts"));
        assert.deepEqual(await ann.client.items("events"), []);
        // Nothing changed since: the same answer applied again changes nothing.
        const again = await ann.client.sync();
        assert.deepEqual(await ann.client.items("contacts"), contacts);
        assert.ok(again.date);
    } finally {
        await ann.close();
    }
});

test("a paginated list: the top page, pages below, a crop that replaces it with a fresh top (no hole), children paged", async () => {
    const ann = await openClient(server, { pageSize: 3, maxChildren: 2 });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        for (const id of ["t1", "t2", "t3", "t4", "t5"]) await raw(server, other, "PUT", `/threads/${id}`, { title: id });
        for (const id of ["m1", "m2", "m3"]) await raw(server, other, "PUT", `/threads/t1/messages/${id}`, { text: id });
        await ann.client.sync();
        const held = async (): Promise<string[]> => (await ann.client.items("threads")).map((thread) => thread.id as string);
        let order = await serverOrder(other, "threads");
        assert.deepEqual(order.slice(0, 2), ["t1", "t5"], "the thread with the newest message first");
        assert.deepEqual(await held(), order.slice(0, 3), "the top page");
        assert.equal(await ann.client.hasAll("threads"), false);
        // t1 carries its newest 2 messages; the third is paged.
        assert.deepEqual((await ann.client.items("messages", { parent: "t1" })).map((message) => message.id), ["m3", "m2"]);
        assert.equal(await ann.client.hasAll("messages", { parent: "t1" }), false);
        assert.equal(await ann.client.loadMore("messages", { parent: "t1" }), true);
        assert.deepEqual((await ann.client.items("messages", { parent: "t1" })).map((message) => message.id), ["m3", "m2", "m1"]);
        // Pages below the last held item.
        assert.equal(await ann.client.loadMore("threads"), true);
        assert.deepEqual(await held(), order);

        // More items changed than a page holds: crop, the list replaced by a fresh top (no hole between pages).
        for (const id of ["t2", "t3", "t4", "t5"]) await raw(server, other, "PUT", `/threads/${id}/messages/n-${id}`, { text: "new" });
        const cropped = await ann.client.sync();
        assert.ok(cropped.replaced.includes("threads"));
        order = await serverOrder(other, "threads");
        assert.deepEqual(await held(), order.slice(0, 3));
        assert.equal(await ann.client.hasAll("threads"), false);
        assert.equal(await ann.client.loadMore("threads"), true);
        assert.deepEqual(await held(), order);

        // A change within a page and a delete: a delta from the last held item, the thread moves up, nothing replaced.
        // (A new message in the last held item itself would move the place `lastId` names: a first page, §4.)
        assert.equal(order.at(-1), "t1");
        await raw(server, other, "PUT", "/threads/t3/messages/m5", { text: "again" });
        await raw(server, other, "DELETE", "/threads/t4");
        const delta = await ann.client.sync();
        assert.ok(!delta.replaced.includes("threads"));
        order = await serverOrder(other, "threads");
        assert.deepEqual(order, ["t3", "t5", "t2", "t1"]);
        assert.deepEqual(await held(), order);
        assert.equal(await ann.client.hasAll("threads"), true);
        assert.deepEqual((await ann.client.items("messages", { parent: "t3" })).map((message) => message.id), ["m5", "n-t3"]);
    } finally {
        await ann.close();
    }
});

test("singletons and bundles: the family and settings, null when unchanged, members and accounts as lists; a typed save of a singleton is a PATCH", async () => {
    const ann = await openClient(server);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        const other = await rawLogIn(server, name);
        assert.equal((await raw(server, other, "PUT", "/family", { name: "Smith-Jones" })).status, 200);
        assert.equal((await raw(server, other, "PUT", "/members/m1", { name: "Kid", role: "child" })).status, 200);
        await ann.client.sync();
        assert.equal((await ann.client.singleton("family"))?.name, "Smith-Jones");
        assert.equal((await ann.client.singleton("settings"))?.notifications, true, "a null singleton is unchanged, not gone");
        assert.deepEqual((await ann.client.items("members")).map((member) => member.role), ["child"]);

        const settings = (await ann.client.singleton("settings"))!;
        await ann.client.save("settings", { ...settings, locale: "fr_FR" });
        const pending = await ann.client.pendingOperations();
        assert.deepEqual(
            pending.map((op) => [op.kind, op.body]),
            [["patch", { locale: "fr_FR" }]]
        );
        const pushed = await ann.client.push();
        assert.equal(pushed.pushed, 1);
        const stored = await raw(server, other, "GET", "/settings");
        assert.equal(stored.body.locale, "fr_FR");
        assert.equal(stored.body.notifications, true);
        assert.equal((await ann.client.singleton("settings"))?.locale, "fr_FR");
    } finally {
        await ann.close();
    }
});

test("the replica holds every collection of the served model: another model's lists, paginated lists with children, and singletons", async () => {
    const recipes = await TestServer.start(["--model", new URL("../../../../models/examples/recipes.json", import.meta.url).pathname]);
    const cook = await openClient(recipes);
    try {
        await cook.client.signUp({ family: "Kitchen", username: username("cook"), password: "password1" });
        const model = await cook.client.serverModel();
        assert.equal(model.name, "recipes");
        const first = await cook.client.sync();
        assert.deepEqual(first.replaced.sort(), ["boards", "preferences", "recipes"]);
        assert.equal((await cook.client.singleton("preferences"))?.units, "metric");
        await cook.client.save("recipes", { id: "r1", title: "Soup", ingredients: ["water", "salt"] });
        await cook.client.save("boards", { id: "b1", name: "Dinners" });
        await cook.client.save("pins", { id: "p1", note: "by the window" }, { parent: "b1" });
        await cook.client.sync();
        assert.deepEqual(await cook.client.pendingOperations(), []);
        assert.equal((await cook.client.item("recipes", "r1"))?.servings, 2, "the server's default, pulled back");
        assert.equal((await cook.client.items("boards"))[0]?.id, "b1");
        assert.deepEqual((await cook.client.items("pins", { parent: "b1" })).map((pin) => pin.note), ["by the window"]);
    } finally {
        await cook.close();
        await recipes.stop();
    }
});

test("one replica file for both SDKs: the same schema as the Swift SDK's, read and verified exact by `syncapi client`", async () => {
    const ann = await openClient(server);
    try {
        const swiftMade = server.path("swift-made.sqlite");
        const listed = await swiftClient(server, swiftMade, ["pending"]);
        assert.equal(listed.code, 0, listed.stderr);
        const { NodeSqliteDriver } = await import("../src/node.js");
        const swiftDb = NodeSqliteDriver.open(swiftMade);
        const schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name";
        try {
            assert.deepEqual(await ann.storage.query(schema), await swiftDb.query(schema));
            assert.deepEqual(
                await ann.storage.query("SELECT identifier FROM grdb_migrations ORDER BY identifier"),
                await swiftDb.query("SELECT identifier FROM grdb_migrations ORDER BY identifier")
            );
        } finally {
            await swiftDb.close();
        }

        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/c1", { firstName: "Ann", emails: ["a@example.com"] });
        await raw(server, other, "PUT", "/threads/t1", { title: "Hi" });
        await raw(server, other, "PUT", "/threads/t1/messages/m1", { text: "hello" });
        await ann.client.sync();
        const items = await ann.client.items("contacts");
        await ann.close();

        // The Swift tool reads the TypeScript client's replica and token file as its own.
        const ls = await swiftClient(server, ann.replicaPath, ["ls", "contacts", "--json"]);
        assert.equal(ls.code, 0, ls.stderr);
        assert.deepEqual(JSON.parse(ls.stdout), items);
        const verify = await swiftClient(server, ann.replicaPath, ["verify"]);
        assert.equal(verify.code, 0, verify.stderr);
        assert.match(verify.stdout, /^exact: /);
        assert.ok(!verify.stdout.includes("repaired"), verify.stdout);
    } finally {
        await ann.close().catch(() => undefined);
    }
});

test("a sync applies all of its answers and the date in one transaction: a failed or broken answer applies nothing", async () => {
    let tamper: ((answer: { responses: { id: string; status: number; body: Record<string, unknown> | null }[] }) => void) | undefined;
    const ann = await openClient(server, {
        async fetch(input, init) {
            const answer = await fetch(input, init);
            if (!tamper || !input.endsWith("/api/v1/group")) return answer;
            const json = await answer.json();
            tamper(json);
            return new Response(JSON.stringify(json), { status: answer.status, headers: { "Content-Type": "application/json" } });
        },
    });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const first = await ann.client.sync();
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/c1", { firstName: "Ann" });
        // The last answer of the group (wallsync, after ctcsync was applied) does not say what §4 says it must.
        tamper = (answer) => {
            delete answer.responses.find((response) => response.id === "wallsync")!.body!.crop;
        };
        await assert.rejects(ann.client.sync(), (error: unknown) => error instanceof SyncClientError && error.code === "invalid_answer");
        assert.deepEqual(await ann.client.items("contacts"), [], "rolled back");
        assert.equal(await ann.client.syncDate(), first.date);
        // One call of the group failed (503): nothing is applied either.
        tamper = (answer) => {
            const events = answer.responses.find((response) => response.id === "evtsync")!;
            events.status = 503;
            events.body = { type: "t", title: "Unavailable", status: 503, detail: "busy", code: "unavailable" };
        };
        await assert.rejects(ann.client.sync(), (error: unknown) => error instanceof SyncClientError && error.kind === "unavailable");
        assert.deepEqual(await ann.client.items("contacts"), []);
        assert.equal(await ann.client.syncDate(), first.date);
        tamper = undefined;
        await ann.client.sync();
        assert.deepEqual((await ann.client.items("contacts")).map((contact) => contact.id), ["c1"]);
    } finally {
        await ann.close();
    }
});

test("a big answer is applied as it is read (streamAnswersOverBytes): the same rows as read whole, in any chunks and key order; cut half-way it applies nothing", async () => {
    type Group = { responses: { id: string; status: number; body: Record<string, unknown> | null }[] };
    // How the group's answer reaches the client: rewritten (`tamper`), re-serialized (`serialize`), in chunks of
    // `chunk` bytes, and cut after `cut` bytes (the network drops the connection).
    const wire: { tamper?: (answer: Group) => void; serialize?: (answer: Group) => string; chunk: number; cut?: (text: string) => number } = { chunk: 7 };
    const fetcher = async (input: string, init: RequestInit): Promise<Response> => {
        const answer = await fetch(input, init);
        if (!input.endsWith("/api/v1/group") || answer.status !== 200) return answer;
        const json = (await answer.json()) as Group;
        wire.tamper?.(json);
        const text = (wire.serialize ?? JSON.stringify)(json);
        const bytes = new TextEncoder().encode(text);
        const cut = wire.cut?.(text);
        let offset = 0;
        const body = new ReadableStream<Uint8Array>({
            pull(controller) {
                if (cut !== undefined && offset >= cut) return controller.error(new Error("connection reset"));
                if (offset >= bytes.length) return controller.close();
                const end = cut !== undefined && offset < cut ? Math.min(cut, offset + wire.chunk) : offset + wire.chunk;
                controller.enqueue(bytes.slice(offset, end));
                offset = end;
            },
        });
        return new Response(body, { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const streamed = await openClient(server, { fetch: fetcher, streamAnswersOverBytes: 0 });
    const whole = await openClient(server, { fetch: fetcher, streamAnswersOverBytes: 1 << 30 });
    const rows = "SELECT collection, parent, id, server, etag, local, localDeleted, sortKey FROM items ORDER BY collection, parent, id";
    const same = async (why: string): Promise<void> => {
        assert.deepEqual(await streamed.storage.query(rows), await whole.storage.query(rows), why);
        assert.equal(await streamed.client.syncDate(), await whole.client.syncDate(), why);
    };
    try {
        const name = username("ann");
        await streamed.client.signUp({ family: "Smith", username: name, password: "password1" });
        await whole.client.logIn({ username: name, password: "password1" });
        const other = await rawLogIn(server, name);
        for (const id of ["c1", "c2", "c3", "c4"]) await raw(server, other, "PUT", `/contacts/${id}`, { firstName: id, notes: "é 😀 \"q\" \\ ]}" });
        await raw(server, other, "PUT", "/events/e1", { title: "A", start: "2026-05-01T19:00:00Z" });
        await streamed.client.sync();
        await whole.client.sync();
        await same("the first sync, in chunks of 7 bytes");
        assert.deepEqual(await streamed.client.items("contacts"), await serverList(other, "ctcsync", "contacts"));

        await raw(server, other, "PUT", "/contacts/c1", { firstName: "c1", lastName: "Changed" });
        await raw(server, other, "DELETE", "/contacts/c2");
        await raw(server, other, "PUT", "/contacts/c5", { firstName: "c5" });
        const before = await streamed.storage.query(rows);
        const date = await streamed.client.syncDate();
        // Cut after the contacts' first row is read (and stored in the transaction), inside the second: nothing stays.
        wire.cut = (text) => {
            assert.ok(text.indexOf('"lastName":"Changed"') < text.indexOf('"id":"c5"'), "c1 comes first");
            return text.indexOf('"id":"c5"');
        };
        wire.chunk = 11;
        await assert.rejects(streamed.client.sync(), (error: unknown) => error instanceof SyncClientError && error.kind === "offline");
        assert.deepEqual(await streamed.storage.query(rows), before, "an answer cut half-way applies nothing");
        assert.equal(await streamed.client.syncDate(), date);
        // A malformed end (the root object never closed) is refused as invalid, and applies nothing either.
        wire.cut = undefined;
        wire.serialize = (answer) => JSON.stringify(answer).slice(0, -1);
        await assert.rejects(streamed.client.sync(), (error: unknown) => error instanceof SyncClientError && error.code === "invalid_answer");
        assert.deepEqual(await streamed.storage.query(rows), before);
        assert.equal(await streamed.client.syncDate(), date);

        // `deleted` before `updated`, keys around them, white space: the same rows.
        wire.serialize = (answer) =>
            JSON.stringify(
                {
                    extra: [1, { a: "]" }],
                    responses: answer.responses.map((response) => {
                        const body = response.body;
                        if (!body || !("updated" in body) || !("deleted" in body)) return response;
                        const { date: at, sync, deleted, updated, ...rest } = body;
                        return { status: response.status, id: response.id, body: { sync, date: at, deleted, note: { x: [] }, updated, ...rest } };
                    }),
                },
                null,
                1
            );
        await streamed.client.sync();
        await whole.client.sync();
        await same("a delta with deleted before updated");
        assert.deepEqual(await streamed.client.items("contacts"), await serverList(other, "ctcsync", "contacts"));

        // An id both stored and deleted in one answer (which §3 rules out): as deletes then upserts leave it, both
        // when `updated` comes first (a delta) and after a full answer's clear; and `sync` after `updated`.
        await raw(server, other, "PUT", "/contacts/c3", { firstName: "c3", lastName: "Again" });
        wire.serialize = undefined;
        wire.tamper = (answer) => {
            const contacts = answer.responses.find((response) => response.id === "ctcsync")!.body!;
            (contacts.deleted as string[]).push("c3", "c4");
        };
        await streamed.client.sync();
        await whole.client.sync();
        await same("a delta that stores and deletes c3");
        await raw(server, other, "PUT", "/contacts/c6", { firstName: "c6" });
        wire.tamper = (answer) => {
            const contacts = answer.responses.find((response) => response.id === "ctcsync")!.body!;
            contacts.sync = false;
            (contacts.deleted as string[]).push("c1", "c6");
        };
        await streamed.client.sync();
        await whole.client.sync();
        await same("a full answer that stores and deletes c1 and c6");
        wire.tamper = undefined;
        wire.serialize = (answer) =>
            JSON.stringify({
                responses: answer.responses.map((response) => {
                    const body = response.body;
                    if (!body || !("updated" in body)) return response;
                    const { updated, deleted, ...rest } = body;
                    return { ...response, body: { updated, deleted, ...rest } };
                }),
            });
        await raw(server, other, "DELETE", "/contacts/c5");
        await streamed.client.sync();
        await whole.client.sync();
        await same("sync after updated and deleted");
    } finally {
        await streamed.close();
        await whole.close();
    }
});
