// The TypeScript client's adapter for the conformance suite (Clients/conformance): one JSON command a line on standard
// input, one JSON answer a line on standard output, `{"ok": true, "result": …}` or `{"ok": false, "error": {"kind",
// "status", "code", "message"}}`. The Swift SDK's adapter (Clients/SyncClient/Sources/SyncClientConformance) takes the
// same commands; Clients/conformance/README.md lists them. Run: node --experimental-sqlite conformance-adapter.js
import { JsonObject, JsonValue, SyncClient, SyncClientError, SyncClientOptions, SyncReport } from "../src/index.js";
import { FileTokenStore, NodeSqliteDriver } from "../src/node.js";

/** A command as the harness sends it. */
type Command = JsonObject & { op?: JsonValue };

let opened: { client: SyncClient; storage: NodeSqliteDriver } | undefined;

function text(command: Command, name: string): string {
    const value = command[name];
    if (typeof value !== "string") throw SyncClientError.invalid(`missing argument ${name}`);
    return value;
}

function parentOf(command: Command): { parent?: string } {
    return typeof command.parent === "string" ? { parent: command.parent } : {};
}

function report(sync: SyncReport): JsonValue {
    return { pushed: sync.pushed, failed: sync.failed, conflicts: sync.conflicts, replaced: [...sync.replaced].sort(), date: sync.date ?? null };
}

function operation(op: { kind: string; collection: string; id: string; parent?: string | undefined }): JsonObject {
    const out: JsonObject = { op: op.kind, collection: op.collection, id: op.id };
    if (op.parent !== undefined) out.parent = op.parent;
    return out;
}

/** An error as the harness compares it: the client's kind, and the server's status and code when there are. */
function describe(error: unknown): JsonValue {
    if (!(error instanceof SyncClientError)) return { kind: "local", message: String(error) };
    const out: JsonObject = { kind: error.kind, message: error.message };
    if (error.status !== undefined) out.status = error.status;
    if (error.code !== undefined && ["server", "unavailable", "throttled"].includes(error.kind)) out.code = error.code;
    if (error.kind === "idTokenRefused") out.check = error.check ?? null;
    return out;
}

async function open(command: Command): Promise<JsonValue> {
    const replicaPath = text(command, "replica");
    const storage = NodeSqliteDriver.open(replicaPath);
    const options: SyncClientOptions = {
        serverUrl: text(command, "server"),
        storage,
        tokenStore: new FileTokenStore(replicaPath + ".token"),
        pushDelayMs: null,
        onlineEvents: null,
        retryPolicy: { attempts: 1 },
    };
    if (typeof command.pageSize === "number") options.pageSize = command.pageSize;
    if (typeof command.maxChildren === "number") options.maxChildren = command.maxChildren;
    if (typeof command.answerMaxBytes === "number") options.answerMaxBytes = command.answerMaxBytes;
    if (typeof command.space === "string") options.space = command.space;
    // SYNCAPI_TS_STREAM_OVER=0: every sync answer applied as it is read (the streamed path), to run the suite over it.
    if (process.env.SYNCAPI_TS_STREAM_OVER) options.streamAnswersOverBytes = Number(process.env.SYNCAPI_TS_STREAM_OVER);
    opened = { client: await SyncClient.open(options), storage };
    return { sdk: "ts" };
}

/** Waits until the visible items hold `id` (or no longer do, with `absent`), as the app's observation sees them; fails after `timeout` seconds (default 30). */
function waitFor(client: SyncClient, command: Command): Promise<void> {
    const id = text(command, "id");
    const absent = command.absent === true;
    const seconds = typeof command.timeout === "number" ? command.timeout : 30;
    return new Promise<void>((resolve, reject) => {
        let done = false;
        let stop: (() => void) | undefined;
        const finish = (error?: unknown): void => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            stop?.();
            if (error === undefined) resolve();
            else reject(error);
        };
        const timer = setTimeout(() => finish(SyncClientError.invalid(`${id} did not ${absent ? "leave" : "arrive"} within ${seconds} s`)), seconds * 1000);
        stop = client.observeItems(
            text(command, "collection"),
            (items) => {
                if (items.some((item) => item.id === id) !== absent) finish();
            },
            { ...parentOf(command), onError: (error) => finish(error) }
        );
        if (done) stop();
    });
}

async function run(command: Command): Promise<JsonValue> {
    if (command.op === "open") return open(command);
    if (!opened) throw SyncClientError.invalid("no client: send open first");
    const { client } = opened;
    switch (command.op) {
        case "close":
            await client.close();
            await opened.storage.close();
            opened = undefined;
            return null;
        case "signUp":
            await client.signUp({
                family: text(command, "family"),
                username: text(command, "username"),
                password: text(command, "password"),
                discardingPendingWrites: command.discard === true,
            });
            return null;
        case "logIn":
            await client.logIn({ username: text(command, "username"), password: text(command, "password"), discardingPendingWrites: command.discard === true });
            return null;
        case "signIn": {
            const signedIn = await client.signIn({ idToken: text(command, "idToken"), ...(typeof command.space === "string" ? { space: command.space } : {}) });
            return { created: signedIn.created, spaces: signedIn.spaces.map((space) => space.name).sort() };
        }
        case "acceptInvitation": {
            const space = await client.acceptInvitation(text(command, "code"));
            return { id: space.id, role: space.role };
        }
        case "put": {
            const item = command.item;
            if (typeof item !== "object" || item === null || Array.isArray(item)) throw SyncClientError.invalid("put needs an item");
            await client.put(text(command, "collection"), text(command, "id"), item, parentOf(command));
            return null;
        }
        case "edit": {
            const collection = text(command, "collection");
            const id = text(command, "id");
            const item: JsonObject = { ...((await client.item(collection, id, parentOf(command))) ?? { id }) };
            const fields = command.fields;
            // A cleared field is sent as null: this client's `save` keeps a member the item leaves out (the Swift SDK's
            // typed model writes a nil field out as null). README: "What the suite found".
            if (typeof fields === "object" && fields !== null && !Array.isArray(fields)) Object.assign(item, fields);
            await client.save(collection, item, parentOf(command));
            return null;
        }
        case "delete":
            await client.delete(text(command, "collection"), text(command, "id"), parentOf(command));
            return null;
        case "logOut":
            await client.logOut({ discardingPendingWrites: command.discard === true, erasingFailedWrites: command.eraseFailed === true });
            return null;
        case "setConflictHandler": {
            const merged = command.merged;
            const resolution =
                command.resolution === "keepServer" || command.resolution === "keepLocal"
                    ? command.resolution
                    : typeof merged === "object" && merged !== null && !Array.isArray(merged)
                      ? { merged }
                      : undefined;
            if (resolution === undefined) throw SyncClientError.invalid("resolution: keepServer, keepLocal, or merged");
            client.setConflictHandler(text(command, "collection"), () => resolution);
            return null;
        }
        case "upload": {
            const bytes = Uint8Array.from(atob(text(command, "base64")), (char) => char.charCodeAt(0));
            return { url: await client.upload(bytes, text(command, "contentType")) };
        }
        case "media": {
            const bytes = await client.media(text(command, "url"));
            return { base64: btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join("")) };
        }
        case "failedUploads":
            return (await client.failedUploads()).map((upload) => ({ url: upload.url, contentType: upload.contentType, status: upload.status, code: upload.code }));
        case "startLive":
            client.startLive();
            return null;
        case "stopLive":
            await client.stopLive();
            return null;
        case "waitFor":
            await waitFor(client, command);
            return null;
        case "sync":
            return report(await client.sync());
        case "push":
            return report(await client.push());
        case "verify": {
            const verified = await client.verify();
            return { checked: [...verified.checked].sort(), repaired: [...verified.repaired].sort() };
        }
        case "loadMore":
            return { nomore: await client.loadMore(text(command, "list"), parentOf(command)) };
        case "hasAll":
            return { nomore: await client.hasAll(text(command, "list"), parentOf(command)) };
        case "items":
            return await client.items(text(command, "collection"), parentOf(command));
        case "pending":
            return (await client.pendingOperations()).map(operation);
        case "failed":
            return (await client.failedOperations()).map((op) => ({ ...operation(op), status: op.status, code: op.code }));
        case "conflicts":
            return (await client.conflictJournal()).map((record) => {
                const out: JsonObject = { collection: record.collection, id: record.itemId, resolution: record.resolution, fields: [...record.fields].sort() };
                if (record.parent !== undefined) out.parent = record.parent;
                return out;
            });
        default:
            throw SyncClientError.invalid(`unknown op ${String(command.op)}`);
    }
}

/** The process's standard streams, as far as the adapter uses them (the package declares no Node types). */
interface StandardStreams {
    stdin: { on(event: "data", listener: (chunk: { toString(): string }) => void): void; on(event: "end", listener: () => void): void };
    stdout: { write(text: string): boolean };
}

const stdio = (globalThis as unknown as { process: StandardStreams }).process;

async function answer(line: string): Promise<void> {
    let reply: JsonValue;
    try {
        const command = JSON.parse(line) as unknown;
        if (typeof command !== "object" || command === null || Array.isArray(command)) throw SyncClientError.invalid("a command is a JSON object with op");
        reply = { ok: true, result: await run(command as Command) };
    } catch (error) {
        reply = { ok: false, error: describe(error) };
    }
    stdio.stdout.write(JSON.stringify(reply) + "\n");
}

// Commands run one at a time, in order; each answer is one line.
let buffered = "";
let queue: Promise<void> = Promise.resolve();
stdio.stdin.on("data", (chunk) => {
    buffered += chunk.toString();
    let end: number;
    while ((end = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, end).trim();
        buffered = buffered.slice(end + 1);
        if (line !== "") queue = queue.then(() => answer(line));
    }
});
stdio.stdin.on("end", () => {
    queue = queue.then(async () => {
        if (opened) await opened.client.close();
    });
});
