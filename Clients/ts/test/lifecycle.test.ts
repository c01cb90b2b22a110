// Writes that leave by themselves, beyond the debounce (writes.test.ts): when the app comes back to the foreground
// (an AppStateLike the app passes: React Native's AppState, a page's visibility), and when live mode's stream
// reconnects; live mode closes in the background and reopens in the foreground.
import assert from "node:assert/strict";
import { AddressInfo, createServer, Socket } from "node:net";
import { after, before, test } from "node:test";
import { AppStateLike, documentVisibility, reactNativeAppState, SyncClientError, SyncReport, SyncStatus } from "../src/index.js";
import { openClient, username } from "./support/clients.js";
import { next, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** An app state the test moves by hand. */
function handAppState(): AppStateLike & { set(foreground: boolean): void } {
    const listeners = new Set<(foreground: boolean) => void>();
    return {
        subscribe(listener) {
            listeners.add(listener);
            return () => listeners.delete(listener);
        },
        set(foreground) {
            for (const listener of [...listeners]) listener(foreground);
        },
    };
}

/** Retries so slow that only a foreground or a reconnection can make a write leave within the test. */
const slowRetries = { retryPolicy: { attempts: 1, baseDelayMs: 600_000, maximumDelayMs: 600_000 }, maximumPushBackoffMs: 600_000, pushDelayMs: 10 };

test("the adapters: React Native's AppState (active is the foreground) and a page's visibilitychange", () => {
    let rnListener: ((state: string) => void) | undefined;
    let removed = false;
    const rn = reactNativeAppState({
        addEventListener(_type, listener) {
            rnListener = listener;
            return { remove: () => (removed = true) };
        },
    });
    const told: boolean[] = [];
    const stopRn = rn.subscribe((foreground) => told.push(foreground));
    rnListener!("background");
    rnListener!("active");
    rnListener!("inactive");
    stopRn();
    assert.deepEqual(told, [false, true, false]);
    assert.ok(removed);

    const page = { visibilityState: "visible", listeners: new Set<() => void>() };
    const visibility = documentVisibility({
        get visibilityState() {
            return page.visibilityState;
        },
        addEventListener: (_type, listener) => page.listeners.add(listener),
        removeEventListener: (_type, listener) => page.listeners.delete(listener),
    });
    const seen: boolean[] = [];
    const stopPage = visibility.subscribe((foreground) => seen.push(foreground));
    page.visibilityState = "hidden";
    for (const listener of page.listeners) listener();
    page.visibilityState = "visible";
    for (const listener of page.listeners) listener();
    stopPage();
    assert.deepEqual(seen, [false, true]);
    assert.equal(page.listeners.size, 0);
});

test("a write that failed while the server was down leaves when the app comes back to the foreground", async () => {
    const appState = handAppState();
    const ann = await openClient(server, { ...slowRetries, appState });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        appState.set(true);
        await server.kill();
        const failed = next<SyncClientError>((listener) => ann.client.on("pushError", listener), "a failed push");
        await ann.client.save("contacts", { id: "c1", firstName: "Offline" });
        assert.equal((await failed).kind, "offline");
        assert.equal(ann.client.status.state, "offline");
        // To the background while the server is still down: the push is tried again at once, and fails again.
        const failedAgain = next<SyncClientError>((listener) => ann.client.on("pushError", listener), "a failed push in the background");
        appState.set(false);
        await failedAgain;
        await server.launch();
        const pushed = next<SyncReport>((listener) => ann.client.on("pushed", listener), "the push");
        appState.set(true);
        assert.equal((await pushed).pushed, 1);
        const other = await rawLogIn(server, name);
        assert.equal((await raw(server, other, "GET", "/contacts/c1")).body.firstName, "Offline");
        assert.equal(ann.client.status.pendingWrites, 0);
    } finally {
        await ann.close();
    }
});

test("live mode closes in the background and reopens in the foreground; its reconnection after an outage pushes what waited", async () => {
    const appState = handAppState();
    const ann = await openClient(server, { ...slowRetries, appState, liveDebounceMs: 20, liveMaximumBackoffMs: 1000 });
    const statusWhere = (what: string, accept: (status: SyncStatus) => boolean): Promise<SyncStatus> =>
        next<SyncStatus>((listener) => ann.client.onStatus(listener), what, accept);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        appState.set(true);
        let connected = statusWhere("live connected", (status) => status.liveConnected);
        ann.client.startLive();
        await connected;
        appState.set(false);
        await statusWhere("live closed", (status) => !status.live && !status.liveConnected);
        connected = statusWhere("live connected again", (status) => status.liveConnected);
        appState.set(true);
        await connected;

        await server.kill();
        await statusWhere("the stream dropped", (status) => !status.liveConnected);
        const failed = next<SyncClientError>((listener) => ann.client.on("pushError", listener), "a failed push");
        await ann.client.save("contacts", { id: "c2", firstName: "While down" });
        await failed;
        const pushed = next<SyncReport>((listener) => ann.client.on("pushed", listener), "the push after the reconnection");
        await server.launch();
        assert.equal((await pushed).pushed, 1);
        const other = await rawLogIn(server, name);
        assert.equal((await raw(server, other, "GET", "/contacts/c2")).body.firstName, "While down");
    } finally {
        await ann.close();
    }
});

test("close() while a push's request is in flight, which then fails: it returns at once, not after the retry's backoff", async () => {
    // A server that reads every request and answers none, until the test cuts its connections.
    const held: Socket[] = [];
    const arrived: Array<() => void> = [];
    const stall = createServer((socket) => {
        held.push(socket);
        socket.once("data", () => {
            for (const wake of arrived.splice(0)) wake();
        });
    });
    await new Promise<void>((done) => stall.listen(0, "127.0.0.1", () => done()));
    const name = username("ann");
    const first = await openClient(server, {}, name);
    await first.client.signUp({ family: "Smith", username: name, password: "password1" });
    await first.close();
    // The same replica and token, now against the stalling server, retries 600 s apart.
    const ann = await openClient(server, { ...slowRetries, serverUrl: `http://127.0.0.1:${(stall.address() as AddressInfo).port}` }, name);
    try {
        const request = new Promise<void>((done) => arrived.push(done));
        await ann.client.save("contacts", { id: "c3", firstName: "Held" });
        await request;
        const closed = ann.client.close();
        for (const socket of held) socket.destroy();
        // The event: close() ends once the push failed. Before the fix it waited the push's 600 s backoff, past the
        // runner's test timeout (the only ceiling).
        await closed;
    } finally {
        for (const socket of held) socket.destroy();
        stall.close();
        await ann.storage.close();
    }
});
