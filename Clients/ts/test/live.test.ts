// Live mode against the real server: another device's write reaches a watching client through GET /changes (read
// from a streamed fetch body), and the stream comes back after the server was killed and started again, resuming with
// Last-Event-ID. Also the SSE parser and the reconnect floor, on their own.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { JsonObject, reconnectDelay, ServerEvent, ServerEventParser, SyncClientError, SyncReport, SyncStatus } from "../src/index.js";
import { openClient, username } from "./support/clients.js";
import { next, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** A `fetch` that records the headers of every `GET /changes` it opens. */
function changesRecorder(): { fetch: (input: string, init: RequestInit) => Promise<Response>; opened: { url: string; headers: Record<string, string> }[] } {
    const opened: { url: string; headers: Record<string, string> }[] = [];
    return {
        opened,
        fetch(input, init) {
            if (input.includes("/changes")) opened.push({ url: input, headers: { ...(init.headers as Record<string, string>) } });
            return fetch(input, init);
        },
    };
}

/** Resolves once the client's status passes `accept`. */
function statusWhere(client: { onStatus(listener: (status: SyncStatus) => void): () => void }, what: string, accept: (status: SyncStatus) => boolean): Promise<SyncStatus> {
    return next<SyncStatus>((listener) => client.onStatus(listener), what, accept);
}

/** Resolves once `collection` holds an item with `id` (observed, not polled). */
function arrives(client: { observeItems(collection: string, listener: (items: JsonObject[]) => void): () => void }, collection: string, id: string): Promise<JsonObject[]> {
    return next<JsonObject[]>((listener) => client.observeItems(collection, listener), `${collection}/${id}`, (items) => items.some((item) => item.id === id));
}

test("the event stream parser: bytes split anywhere, CR/LF/CRLF, several data lines, ids kept, retry, comments, a BOM, a bound", () => {
    const parser = new ServerEventParser(64);
    const text = "\uFEFFretry: 1500\r\n: ping\r\n\r\nevent: change\ndata: {\"date\":\ndata: \"é1\"}\nid: d1\n\nevent: change\rdata: x\r\rdata: y\n\n";
    const bytes = new TextEncoder().encode(text);
    const events: ServerEvent[] = [];
    // One byte at a time: lines, CRLFs and the two bytes of "é" all cut.
    for (const byte of bytes) events.push(...parser.feed(new Uint8Array([byte])));
    assert.equal(parser.retry, 1500);
    assert.deepEqual(events, [
        { event: "change", data: '{"date":\n"é1"}', id: "d1" },
        { event: "change", data: "x", id: "d1" },
        { event: "message", data: "y", id: "d1" },
    ]);
    assert.throws(
        () => parser.feed(new TextEncoder().encode("data: " + "z".repeat(100))),
        (error: unknown) => error instanceof SyncClientError && error.code === "answer_too_large"
    );
});

test("the reconnect delay: the server's retry after a clean end, the backoff after failures, never under 1 s nor over the maximum", () => {
    assert.equal(reconnectDelay(0, 0, 50, 30_000), 1000, "retry: 0 is floored");
    assert.equal(reconnectDelay(0, 5000, 50, 30_000), 5000);
    assert.equal(reconnectDelay(0, undefined, 2500, 30_000), 2500);
    assert.equal(reconnectDelay(3, 2000, 8000, 30_000), 8000);
    assert.equal(reconnectDelay(3, 9000, 8000, 30_000), 9000);
    assert.equal(reconnectDelay(8, undefined, 120_000, 30_000), 30_000);
});

test("live mode: another device's write reaches the watching client, which syncs on the notice", async () => {
    const recorder = changesRecorder();
    const ann = await openClient(server, { fetch: recorder.fetch, liveDebounceMs: 20 });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        const connected = statusWhere(ann.client, "live connected", (status) => status.liveConnected);
        ann.client.startLive();
        assert.equal(ann.client.status.live, true);
        await connected;
        // The first connection names the replica's date.
        assert.match(recorder.opened[0]!.url, /\/api\/v1\/changes\?date=/);
        assert.equal(recorder.opened[0]!.headers.Accept, "text/event-stream");

        const other = await rawLogIn(server, name);
        const arrived = arrives(ann.client, "contacts", "c1");
        const synced = next<SyncReport>((listener) => ann.client.on("synced", listener), "a sync");
        assert.equal((await raw(server, other, "PUT", "/contacts/c1", { firstName: "From the phone" })).status, 200);
        const items = await arrived;
        assert.equal(items.find((item) => item.id === "c1")?.firstName, "From the phone");
        assert.ok((await synced).date);

        await ann.client.stopLive();
        assert.equal(ann.client.status.live, false);
        assert.equal(ann.client.status.liveConnected, false);
    } finally {
        await ann.close();
    }
});

test("live mode comes back after the server was killed and started again, resuming with Last-Event-ID", async () => {
    const recorder = changesRecorder();
    const ann = await openClient(server, { fetch: recorder.fetch, liveDebounceMs: 20, retryPolicy: { attempts: 2, baseDelayMs: 50, maximumDelayMs: 1000 } });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        const connected = statusWhere(ann.client, "live connected", (status) => status.liveConnected);
        ann.client.startLive();
        await connected;
        const other = await rawLogIn(server, name);
        const first = arrives(ann.client, "contacts", "before");
        await raw(server, other, "PUT", "/contacts/before", { firstName: "Before" });
        await first;
        const date = await ann.client.syncDate();

        const dropped = statusWhere(ann.client, "the stream dropped", (status) => !status.liveConnected);
        await server.kill();
        await dropped;
        assert.equal(ann.client.status.live, true, "live mode stays on while it reconnects");
        const opened = recorder.opened.length;
        await server.launch();
        await statusWhere(ann.client, "live connected again", (status) => status.liveConnected);
        const again = recorder.opened.slice(opened);
        assert.ok(again.length >= 1);
        // The reconnection resumes from the last notice it synced, by its id, with no date.
        const last = again[again.length - 1]!;
        assert.equal(last.headers["Last-Event-ID"], date);
        assert.ok(!/date=/.test(last.url));

        const second = arrives(ann.client, "contacts", "after");
        await raw(server, await rawLogIn(server, name), "PUT", "/contacts/after", { firstName: "After" });
        await second;
    } finally {
        await ann.close();
    }
});

test("a stream that goes silent (a half-open connection) is dropped after the idle timeout and opened again", async () => {
    let opened = 0;
    const ann = await openClient(server, {
        liveDebounceMs: 20,
        liveIdleTimeoutMs: 300,
        fetch: (input, init) => {
            if (!input.includes("/changes")) return fetch(input, init);
            opened += 1;
            if (opened > 1) return fetch(input, init);
            // The first connection answers its head, then never sends a byte (not even the server's pings).
            const silent = new ReadableStream<Uint8Array>({
                start(controller) {
                    init.signal?.addEventListener("abort", () => controller.error(new Error("aborted")));
                },
            });
            return Promise.resolve(new Response(silent, { status: 200, headers: { "Content-Type": "text/event-stream" } }));
        },
    });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.sync();
        ann.client.startLive();
        const arrived = arrives(ann.client, "contacts", "c9");
        await statusWhere(ann.client, "the real stream", (status) => status.liveConnected && opened >= 2);
        await raw(server, await rawLogIn(server, name), "PUT", "/contacts/c9", { firstName: "After the silence" });
        await arrived;
    } finally {
        await ann.close();
    }
});
