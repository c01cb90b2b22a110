// What the browser test runs inside the page: a client over IndexedDB, its session in localStorage, and small steps
// the test calls one by one through WebDriver (each answers JSON). The page's origin is the test's static server,
// which also forwards /api/ to the SyncAPI server (same origin: the server has no CORS) and can play the network down.
import { IndexedDbDriver, JsonObject, SqlExecutor, StorageDriver, SyncClient } from "../../src/index.js";
import { ClientSession, MemoryTokenStore, parseSession, TokenStore } from "../../src/session.js";

/** The session in the page's localStorage, so that a reload stays signed in. */
class LocalStorageTokenStore implements TokenStore {
    constructor(private readonly key: string) {}
    async load(): Promise<ClientSession | undefined> {
        const text = localStorage.getItem(this.key);
        return text === null ? undefined : parseSession(text);
    }
    async save(session: ClientSession): Promise<void> {
        localStorage.setItem(this.key, JSON.stringify(session));
    }
    async clear(): Promise<void> {
        localStorage.removeItem(this.key);
    }
}

let client: SyncClient | undefined;
let storage: IndexedDbDriver | undefined;
const notices: string[] = [];

function opened(): SyncClient {
    if (!client) throw new Error("open the client first");
    return client;
}

async function ids(collection: string): Promise<string[]> {
    return (await opened().items(collection)).map((item) => String(item.id));
}

/** The steps of the test, each a promise of JSON. */
export const harness = {
    async open(): Promise<{ contacts: string[]; pending: number; signedIn: boolean }> {
        storage = await IndexedDbDriver.open("replica");
        client = await SyncClient.open({
            serverUrl: location.origin,
            storage,
            tokenStore: new LocalStorageTokenStore("syncapi-session"),
            pushDelayMs: 50,
            maximumPushBackoffMs: 500,
            retryPolicy: { attempts: 1, baseDelayMs: 50 },
            liveDebounceMs: 20,
        });
        client.on("synced", (report) => notices.push(report.date ?? ""));
        return { contacts: client.isSignedIn ? await ids("contacts") : [], pending: (await client.pendingOperations()).length, signedIn: client.isSignedIn };
    },

    async signUp(username: string): Promise<{ contacts: string[]; date: string | undefined }> {
        await opened().signUp({ family: "Browser", username, password: "password1" });
        await opened().save("contacts", { id: "online", firstName: "Made online" });
        const report = await opened().sync();
        return { contacts: await ids("contacts"), date: report.date };
    },

    /** A write while the network is down: applied at once, kept in the queue (its push fails and is retried later). */
    async writeOffline(): Promise<{ contacts: string[]; pending: number; error: string }> {
        await opened().save("contacts", { id: "offline", firstName: "Made offline" } as JsonObject);
        const error = await opened()
            .push()
            .then(
                () => "",
                (failure: unknown) => String((failure as { kind?: string }).kind ?? failure)
            );
        return { contacts: await ids("contacts"), pending: (await opened().pendingOperations()).length, error };
    },

    /** The browser's `online` event, as the network comes back; answers once the queue is empty. */
    async online(): Promise<{ pending: number }> {
        window.dispatchEvent(new Event("online"));
        const deadline = Date.now() + 30_000;
        while ((await opened().pendingOperations()).length > 0) {
            if (Date.now() > deadline) throw new Error("the queue did not push after the network came back");
            await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return { pending: 0 };
    },

    startLive(): { live: true } {
        opened().startLive();
        return { live: true };
    },

    /** Waits until the replica holds `id` in `collection` (live mode's notice and sync); answers the syncs seen. */
    async waitFor(collection: string, id: string): Promise<{ ids: string[]; syncs: number }> {
        const deadline = Date.now() + 30_000;
        while (!(await ids(collection)).includes(id)) {
            if (Date.now() > deadline) throw new Error(`${collection}/${id} never arrived`);
            await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return { ids: await ids(collection), syncs: notices.length };
    },

    /** bench/ts: the raw download of the list in this page (fetch with gzip, read whole, parsed). */
    async benchRaw(token: string): Promise<{ seconds: number; rows: number }> {
        const started = performance.now();
        const answer = await fetch("/api/v1/ctcsync", { headers: { Authorization: `Bearer ${token}` } });
        const body = JSON.parse(await answer.text()) as { updated: unknown[] };
        return { seconds: (performance.now() - started) / 1000, rows: body.updated.length };
    },

    /** bench/ts: the first sync into a new IndexedDB replica, then `changes` remote changes each synced (apply timed alone). */
    async benchSync(session: ClientSession, name: string, changes: number, durability: "strict" | "relaxed"): Promise<Record<string, number>> {
        await IndexedDbDriver.delete(name);
        const spans: number[] = [];
        const driver = await IndexedDbDriver.open(name, { durability });
        const timed: StorageDriver = {
            exec: (sql) => driver.exec(sql),
            query: (sql, params) => driver.query(sql, params),
            run: (sql, params) => driver.run(sql, params),
            close: () => driver.close(),
            async transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
                const started = performance.now();
                try {
                    return await driver.transaction(body);
                } finally {
                    spans.push(performance.now() - started);
                }
            },
        };
        const tokenStore = new MemoryTokenStore();
        await tokenStore.save(session);
        const bench = await SyncClient.open({ serverUrl: location.origin, storage: timed, tokenStore, pushDelayMs: null, onlineEvents: null });
        let started = performance.now();
        await bench.sync();
        const seconds = (performance.now() - started) / 1000;
        const firstApplyMs = Math.max(...spans);
        const memory = (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory;
        const heapMiB = (memory?.usedJSHeapSize ?? 0) / 1048576;
        const change: number[] = [];
        const apply: number[] = [];
        for (let i = 0; i < changes; i++) {
            await fetch(`/api/v1/contacts/c${String(i).padStart(6, "0")}`, {
                method: "PUT",
                headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "application/json" },
                body: JSON.stringify({ firstName: `Changed ${i}` }),
            });
            spans.length = 0;
            started = performance.now();
            await bench.sync();
            change.push(performance.now() - started);
            apply.push(Math.max(...spans));
        }
        const rows = await bench.heldCount("contacts");
        await bench.close();
        await driver.close();
        // A reload's cost: the replica read back from IndexedDB into memory.
        started = performance.now();
        const again = await IndexedDbDriver.open(name);
        const reopenMs = performance.now() - started;
        await again.close();
        await IndexedDbDriver.delete(name);
        const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
        return { seconds, firstApplyMs, heapMiB, rows, changeMedianMs: median(change), changeApplyMedianMs: median(apply), reopenMs };
    },

    async close(): Promise<{ closed: true }> {
        await client?.close();
        await storage?.close();
        client = undefined;
        storage = undefined;
        return { closed: true };
    },
};
