// Clients of the tests: each with its own replica file and token file in the server's folder.
import { execFile } from "node:child_process";
import { SyncClient, SyncClientOptions } from "../../src/index.js";
import { FileTokenStore, NodeSqliteDriver } from "../../src/node.js";
import { serverBinary, TestServer } from "./server.js";

export interface OpenedClient {
    client: SyncClient;
    storage: NodeSqliteDriver;
    replicaPath: string;
    close(): Promise<void>;
}

let counter = 0;

/** A client of `server` on a new replica (writes wait for `sync()`/`push()` unless `pushDelayMs` is given). */
export async function openClient(server: TestServer, options: Partial<SyncClientOptions> = {}, name?: string): Promise<OpenedClient> {
    const replicaPath = server.path(`${name ?? `replica-${++counter}`}.sqlite`);
    const storage = NodeSqliteDriver.open(replicaPath);
    const client = await SyncClient.open({
        serverUrl: server.url,
        storage,
        tokenStore: new FileTokenStore(replicaPath + ".token"),
        pushDelayMs: null,
        onlineEvents: null,
        retryPolicy: { attempts: 2, baseDelayMs: 50 },
        // SYNCAPI_TS_STREAM_OVER=0 runs every test's syncs through the streamed apply (answers read as they come).
        ...(process.env.SYNCAPI_TS_STREAM_OVER ? { streamAnswersOverBytes: Number(process.env.SYNCAPI_TS_STREAM_OVER) } : {}),
        ...options,
    });
    return {
        client,
        storage,
        replicaPath,
        async close() {
            await client.close();
            await storage.close();
        },
    };
}

/** A unique username (the server of a test file is shared by its tests). */
export function username(prefix: string): string {
    return `${prefix}${++counter}x${Date.now() % 100_000}`;
}

/** Runs `syncapi client <args> --server … --replica …` (the Swift SDK's command line); its exit code and output. */
export function swiftClient(server: TestServer, replicaPath: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((done) => {
        execFile(serverBinary(), ["client", ...args, "--server", server.url, "--replica", replicaPath], {}, (error, stdout, stderr) => {
            const code = error ? Number((error as { code?: unknown }).code ?? 1) : 0;
            done({ code, stdout, stderr });
        });
    });
}

/** One sub-request of a group the client sent, with the status it was answered. */
export interface Recorded {
    method: string;
    url: string;
    headers: Record<string, string>;
    body: unknown;
    status: number;
}

/** A `fetch` that records every sub-request of every `POST /group` with its answer's status (to check what went on the wire). */
export function recordingFetch(): { fetch: (input: string, init: RequestInit) => Promise<Response>; sent: Recorded[] } {
    const sent: Recorded[] = [];
    return {
        sent,
        async fetch(input, init) {
            const response = await fetch(input, init);
            if (input.endsWith("/api/v1/group") && typeof init.body === "string") {
                const requests = (JSON.parse(init.body) as { requests: Omit<Recorded, "status">[] }).requests;
                const answer = (await response.clone().json()) as { responses?: { id: string; status: number }[] };
                for (const request of requests) {
                    const status = answer.responses?.find((candidate) => candidate.id === (request as unknown as { id: string }).id)?.status ?? 0;
                    sent.push({ method: request.method, url: request.url, headers: request.headers ?? {}, body: request.body, status });
                }
            }
            return response;
        },
    };
}
