import { SyncClientError } from "./errors.js";

/** What the client is doing now (the Swift SDK's `SyncStatus.State`): the one word a status badge shows. */
export type SyncState = "idle" | "syncing" | "offline" | "error";

/**
 * What an app shows about syncing (a "saving…", "offline, 3 changes waiting" or "live" badge): one value the client
 * keeps current, handed to `onStatus` listeners on every change. It exists so that an app need not piece the state
 * together from events and counts.
 */
export interface SyncStatus {
    /** `syncing` while a sync or a push runs; `offline` after one failed for the network (or a busy server); `error` after another failure. */
    state: SyncState;
    signedIn: boolean;
    /** Writes and uploads waiting to reach the server. */
    pendingWrites: number;
    /** Writes and uploads the server refused for good. */
    failedWrites: number;
    /** When the last sync ended well. */
    lastSuccessfulSync: Date | undefined;
    /** Why the last sync or push failed; undefined once one succeeds. */
    lastError: SyncClientError | undefined;
    /** Live mode is on (`startLive()`). */
    live: boolean;
    /** Live mode holds an open change stream right now (false while it reconnects). */
    liveConnected: boolean;
}

/** Keeps the current status and hands every change (and only changes) to every listener, so that a view redraws only when what it shows moved. */
export class StatusCenter {
    private value: SyncStatus = {
        state: "idle",
        signedIn: false,
        pendingWrites: 0,
        failedWrites: 0,
        lastSuccessfulSync: undefined,
        lastError: undefined,
        live: false,
        liveConnected: false,
    };
    private readonly listeners = new Set<(status: SyncStatus) => void>();

    get current(): SyncStatus {
        return { ...this.value };
    }

    /** Applies `change`; listeners hear of it when a field moved. */
    update(change: Partial<SyncStatus>): void {
        const next = { ...this.value, ...change };
        const keys = Object.keys(next) as (keyof SyncStatus)[];
        if (keys.every((key) => next[key] === this.value[key])) return;
        this.value = next;
        for (const listener of [...this.listeners]) {
            try {
                listener({ ...next });
            } catch {
                // A listener never breaks the client.
            }
        }
    }

    /** Calls `listener` with the current status now, then at each change; answers the function that stops it. */
    listen(listener: (status: SyncStatus) => void): () => void {
        this.listeners.add(listener);
        try {
            listener(this.current);
        } catch {
            // As above.
        }
        return () => this.listeners.delete(listener);
    }
}
