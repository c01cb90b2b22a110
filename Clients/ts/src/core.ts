import type { SyncReport } from "./client.js";
import type { HttpAnswer, HttpCore, RetryPolicy } from "./http.js";
import type { JsonValue } from "./json.js";
import type { Log } from "./logger.js";
import type { ClientSession } from "./session.js";
import type { StatusCenter } from "./status.js";
import type { StorageDriver } from "./storage/driver.js";

/**
 * What the client's parts outside `client.ts` (live mode, spaces, media, observation, status) need of it. It exists so
 * that each concept lives in its own file without making the client's internals public: the client builds one and
 * hands it to each part.
 */
export interface ClientCore {
    readonly http: HttpCore;
    readonly db: StorageDriver;
    readonly log: Log;
    readonly retry: RetryPolicy;
    readonly status: StatusCenter;
    /** The space this client's replica holds (undefined: the home space). */
    readonly space: string | undefined;
    /** The session now (undefined: signed out). */
    session(): ClientSession | undefined;
    /** Whether `close()` was called. */
    isClosed(): boolean;
    /** One authenticated call; a 401 ends the session (`notSignedIn`). */
    call(method: string, path: string, body?: JsonValue, headers?: Record<string, string>, maxBytes?: number): Promise<HttpAnswer>;
    /** A 401 ended the session: forget it, tell the app. */
    sessionEnded(): Promise<void>;
    /** The client's sync (single-flight). */
    sync(): Promise<SyncReport>;
    /** Pushes queued writes `delayMs` from now (default: the client's push delay). */
    schedulePush(delayMs?: number): void;
    /** The network is back: queued writes leave now. */
    online(): void;
    /** The replica's date of sync. */
    syncDate(): Promise<string | undefined>;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
        if (signal?.aborted) return resolve();
        const done = (): void => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener("abort", done);
    });
}
