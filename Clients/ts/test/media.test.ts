// Media against the real server (protocol §10): an upload queued offline survives a restart of the app and leaves
// before the write that names it; a download is checked and kept, the second read served from the cache; an upload the
// server refuses for good is set aside without blocking the queue; the cache keeps to its size, never evicting uploads.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { mediaSha, mediaUrl, MemoryMediaStore, SyncClient } from "../src/index.js";
import { writeFileSync } from "node:fs";
import { FileMediaStore, FileTokenStore, NodeSqliteDriver, uploadFile } from "../src/node.js";
import { openClient, username } from "./support/clients.js";
import { rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

/** A PNG's signature followed by `fill` (the server checks the signature only). */
function png(fill: string, size = 64): Uint8Array {
    const bytes = new Uint8Array(size);
    bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    bytes.set(new TextEncoder().encode(fill).subarray(0, size - 8), 8);
    return bytes;
}

/** A client on `replicaPath` whose media live beside it (the restartable app). */
async function appClient(replicaPath: string, options: { fetch?: (input: string, init: RequestInit) => Promise<Response> } = {}) {
    const storage = NodeSqliteDriver.open(replicaPath);
    const client = await SyncClient.open({
        serverUrl: server.url,
        storage,
        tokenStore: new FileTokenStore(replicaPath + ".token"),
        mediaStore: FileMediaStore.beside(replicaPath),
        pushDelayMs: null,
        onlineEvents: null,
        retryPolicy: { attempts: 2, baseDelayMs: 50 },
        ...options,
    });
    return {
        client,
        async close() {
            await client.close();
            await storage.close();
        },
    };
}

test("an upload queued offline survives a restart, leaves before the write naming it, and is downloaded once then read from the cache", async () => {
    const path = server.path("media-app.sqlite");
    const name = username("ann");
    let app = await appClient(path);
    const photo = png("family picnic");
    let url: string;
    try {
        await app.client.signUp({ family: "Smith", username: name, password: "password1" });
        writeFileSync(server.path("picnic.png"), photo);
        url = await uploadFile(app.client, server.path("picnic.png"), "image/png");
        assert.equal(url, mediaUrl(photo));
        await assert.rejects(uploadFile(app.client, server.path("picnic.png"), "image/png", 10), (error: unknown) => (error as { kind?: string }).kind === "invalid");
        assert.equal(mediaSha(url), mediaSha(`${server.url}${url}`));
        await app.client.save("wall", { id: "w1", type: "photo", mediaUrl: url, text: "Picnic" });
        assert.equal(app.client.status.pendingWrites, 2, "the upload and the write wait");
        assert.deepEqual(await app.client.media(url), photo, "the app shows its own upload at once, offline");
    } finally {
        await app.close();
    }
    // The app was closed before anything left: it opens again with both queued.
    const sent: string[] = [];
    app = await appClient(path, {
        fetch: (input, init) => {
            sent.push(`${init.method} ${new URL(input).pathname}`);
            return fetch(input, init);
        },
    });
    try {
        assert.equal(app.client.status.pendingWrites, 2);
        const report = await app.client.push();
        assert.equal(report.pushed, 2, "the upload and the write, as the Swift SDK counts them");
        assert.equal(app.client.status.pendingWrites, 0);
        const media = sent.indexOf("POST /api/v1/media");
        assert.ok(media >= 0 && media < sent.indexOf("POST /api/v1/group"), `the medium first: ${sent.join(", ")}`);
        const other = await rawLogIn(server, name);
        const answer = await fetch(`${server.url}${url}`, { headers: { Authorization: `Bearer ${other}` } });
        assert.equal(answer.status, 200);
        assert.deepEqual(new Uint8Array(await answer.arrayBuffer()), photo);
    } finally {
        await app.close();
    }

    // Another device downloads it once; the second read comes from its cache.
    const downloads: string[] = [];
    const external: RequestInit[] = [];
    const phone = await openClient(server, {
        fetch: (input, init) => {
            if (input.includes("/media/")) downloads.push(input);
            if (input.endsWith("/api/v1/?from=cdn")) external.push(init);
            return fetch(input, init);
        },
    });
    try {
        await phone.client.logIn({ username: name, password: "password1" });
        await phone.client.sync();
        const post = await phone.client.item("wall", "w1");
        const [first, second] = await Promise.all([phone.client.media(String(post?.mediaUrl)), phone.client.media(String(post?.mediaUrl))]);
        assert.deepEqual(first, photo);
        assert.deepEqual(second, photo);
        assert.deepEqual(await phone.client.media(url), photo);
        assert.equal(downloads.length, 1, "one download for two readers at once and a later read");
        await assert.rejects(phone.client.media("not a url"), (error: unknown) => (error as { kind?: string }).kind === "invalid");
        await assert.rejects(phone.client.media("http://example.com/cat.jpg"), (error: unknown) => (error as { kind?: string }).kind === "invalid");
        // A medium of another server (here any URL that is not a media URL of this one): fetched without the token, then cached.
        const elsewhere = `${server.url}/api/v1/?from=cdn`;
        const described = JSON.parse(new TextDecoder().decode(await phone.client.media(elsewhere))) as { limits?: unknown };
        assert.ok(described.limits);
        await phone.client.media(elsewhere);
        assert.equal(external.length, 1, "fetched once, then read from the cache");
        assert.equal(JSON.stringify(external[0]!.headers ?? {}).includes("Bearer"), false, "the session's token stays with its server");
    } finally {
        await phone.close();
    }
});

test("an upload refused for good (not a medium) is set aside with the server's code, and the queue goes on", async () => {
    const ann = await openClient(server, { mediaStore: new MemoryMediaStore() });
    try {
        await ann.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        await ann.client.upload(new TextEncoder().encode("not an image at all"), "image/png");
        const good = await ann.client.upload(png("good"), "image/png");
        await ann.client.save("contacts", { id: "c1", firstName: "Ann" });
        const report = await ann.client.push();
        assert.equal(report.pushed, 2, "the good upload and the write");
        const failed = await ann.client.failedUploads();
        assert.equal(failed.length, 1);
        assert.equal(failed[0]!.status, 415);
        assert.equal(failed[0]!.code, "unsupported_media_type");
        assert.equal(ann.client.status.failedWrites, 1);
        assert.equal(ann.client.status.pendingWrites, 0);
        assert.deepEqual(await ann.client.media(good), png("good"));
    } finally {
        await ann.close();
    }
});

test("the media cache keeps to its size, least recently used out first, never an upload still waiting", async () => {
    const store = new MemoryMediaStore();
    const ann = await openClient(server, { mediaStore: store, mediaCacheBytes: 250 });
    try {
        await ann.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        const urls: string[] = [];
        for (const fill of ["one", "two", "three"]) urls.push(await ann.client.upload(png(fill, 100), "image/png"));
        await ann.client.push();
        // Uploaded: now only cache. A fresh device would download them; here the store is emptied and read again.
        for (const file of await store.list()) await store.remove(file.name);
        const waiting = await ann.client.upload(png("waiting", 100), "image/png");
        for (const url of urls) await ann.client.media(url);
        const names = (await store.list()).map((file) => file.name);
        assert.ok(names.includes(mediaSha(waiting)!), "the upload waiting is kept");
        assert.ok(names.includes(mediaSha(urls[2]!)!), "the one just read is kept");
        assert.ok(!names.includes(mediaSha(urls[0]!)!), "the least recently used went first");
        assert.ok((await store.list()).reduce((sum, file) => sum + file.size, 0) <= 250 || names.length === 2);
    } finally {
        await ann.close();
    }
});

test("a download cut by the network resumes with Range from the bytes that arrived, and is checked whole", async () => {
    const name = username("ann");
    const ann = await openClient(server, { mediaStore: new MemoryMediaStore() });
    const photo = png("a long video, cut half-way", 4096);
    let url: string;
    try {
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        url = await ann.client.upload(photo, "image/png");
        await ann.client.push();
    } finally {
        await ann.close();
    }
    const ranges: (string | undefined)[] = [];
    let cut = false;
    const store = new MemoryMediaStore();
    const phone = await openClient(server, {
        mediaStore: store,
        fetch: async (input, init) => {
            const response = await fetch(input, init);
            if (!input.includes("/media/")) return response;
            ranges.push((init.headers as Record<string, string>).Range);
            if (cut) return response;
            cut = true;
            // The connection drops after the first 1000 bytes.
            const whole = new Uint8Array(await response.arrayBuffer());
            let pulls = 0;
            const body = new ReadableStream<Uint8Array>({
                pull(controller) {
                    if (pulls++ === 0) controller.enqueue(whole.subarray(0, 1000));
                    else controller.error(new TypeError("connection reset"));
                },
            });
            return new Response(body, { status: response.status, headers: response.headers });
        },
    });
    try {
        await phone.client.logIn({ username: name, password: "password1" });
        assert.deepEqual(await phone.client.media(url), photo);
        assert.deepEqual(ranges, [undefined, "bytes=1000-"]);
        assert.deepEqual((await store.list()).map((file) => file.name), [mediaSha(url)], "the part is gone, the medium kept");
    } finally {
        await phone.close();
    }
});
