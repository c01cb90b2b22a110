import { ClientCore, sleep } from "./core.js";
import { SyncClientError } from "./errors.js";
import { queryEscape, readCapped } from "./http.js";
import { ServerEvent, ServerEventParser } from "./sse.js";

/** How `followEventStream` ended: its callers act on each differently (stop, wait for a sign-in, sync to learn why it was refused). */
export type EventStreamEnd = { kind: "cancelled" } | { kind: "signedOut" } | { kind: "refused"; error: SyncClientError };

/** The timing of live mode's reconnections: the client's options, gathered so that live mode and the all-spaces stream share them. */
export interface LiveTiming {
    /** How long live mode waits after a notice before it syncs (notices in a burst make one sync). Default 200 ms. */
    debounceMs: number;
    /** Longest wait between two reconnections. Default 30 s. */
    maximumBackoffMs: number;
    /** A stream that sends nothing (not even the server's 20 s `: ping`) for this long is dropped and opened again. Default 60 s. */
    idleTimeoutMs: number;
}

/**
 * The shortest wait before an event stream is opened again, whatever the server's `retry:` says: a server or a proxy
 * that answers 200 and closes at once, with `retry: 0`, would otherwise be called again and again with no pause.
 */
export const minimumReconnectMs = 1000;

/**
 * How long to wait before the stream is opened again: after a stream the server ended, its `retry:` hint (the backoff
 * when it gave none); after failures, the backoff, never shorter than the hint; never shorter than
 * `minimumReconnectMs`, never longer than `maximumMs` (the Swift SDK's `reconnectDelay`).
 */
export function reconnectDelay(failures: number, serverRetryMs: number | undefined, backoffMs: number, maximumMs: number): number {
    const delay = failures === 0 ? (serverRetryMs ?? backoffMs) : Math.max(backoffMs, serverRetryMs ?? 0);
    return Math.min(Math.max(delay, minimumReconnectMs), Math.max(maximumMs, minimumReconnectMs));
}

/** What one connection of an event stream asks for: asked again at each connection, since `Last-Event-ID` and the date move. */
export interface StreamRequest {
    path: string;
    headers: Record<string, string>;
    /** false: not in the client's space (`/changes?spaces=all`). */
    prefixed?: boolean;
}

/**
 * Keeps one of the server's event streams open while signed in (protocol §9, §15): live mode's `GET /changes` and the
 * all-spaces stream. It exists because `EventSource` cannot send a bearer token and React Native has none: the stream
 * is a `fetch` whose body is read as it arrives and parsed here. Each connection asks `request` for its path and
 * headers, then hands the events of each piece to `handle`. The stream is opened again when it ends or fails (after
 * `reconnectDelay`); `handle` throwing counts as a failed connection. A 401 ends the session and the loop; a refusal
 * (a 4xx but 408 and 429) ends it when `refusalEnds`, else it is retried like a failure.
 */
export async function followEventStream(
    core: ClientCore,
    timing: LiveTiming,
    signal: AbortSignal,
    options: {
        refusalEnds: boolean;
        request: () => Promise<StreamRequest>;
        connected?: (connected: boolean) => void;
        handle: (events: ServerEvent[]) => Promise<void>;
    }
): Promise<EventStreamEnd> {
    let failures = 0;
    let serverRetry: number | undefined;
    while (!signal.aborted && !core.isClosed()) {
        const session = core.session();
        if (!session) return { kind: "signedOut" };
        // One connection: dropped when the app stops, or when it has been silent past the idle timeout.
        const connection = new AbortController();
        const stop = (): void => connection.abort();
        signal.addEventListener("abort", stop);
        let watchdog: ReturnType<typeof setTimeout> | undefined;
        const arm = (): void => {
            clearTimeout(watchdog);
            watchdog = setTimeout(stop, timing.idleTimeoutMs);
        };
        try {
            const request = await options.request();
            const headers = { ...request.headers, Accept: "text/event-stream", "Cache-Control": "no-cache" };
            const response = await core.http.stream(request.path, { token: session.token, headers, signal: connection.signal, prefixed: request.prefixed ?? true });
            if (response.status === 401) {
                await response.body?.cancel().catch(() => undefined);
                await core.sessionEnded();
                return { kind: "signedOut" };
            }
            if (response.status !== 200) {
                const body = await readCapped(response, 64 * 1024).catch(() => new Uint8Array(0));
                let json: unknown;
                try {
                    json = JSON.parse(new TextDecoder().decode(body));
                } catch {
                    json = undefined;
                }
                const error = SyncClientError.from(response.status, json as never, response.headers.get("Retry-After"));
                if (options.refusalEnds && response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
                    return { kind: "refused", error };
                }
                throw error;
            }
            if (response.body === null) throw SyncClientError.invalid("this fetch gives no streamed body: live mode needs one (React Native: a streaming fetch)");
            failures = 0;
            core.log.write("info", "live", "stream connected", { path: request.path.split("?")[0]! });
            options.connected?.(true);
            const reader = response.body.getReader();
            const parser = new ServerEventParser();
            try {
                arm();
                for (;;) {
                    const piece = await reader.read();
                    if (piece.done) break;
                    arm();
                    const events = parser.feed(piece.value);
                    if (parser.retry !== undefined) serverRetry = parser.retry;
                    if (events.length > 0) {
                        // A sync may outlast the idle timeout: the stream is not silent, the client is busy.
                        clearTimeout(watchdog);
                        await options.handle(events);
                        arm();
                    }
                }
            } finally {
                options.connected?.(false);
                await reader.cancel().catch(() => undefined);
            }
            core.log.write("info", "live", "stream ended by the server");
        } catch (error) {
            if (signal.aborted || core.isClosed()) return { kind: "cancelled" };
            failures += 1;
            const wrapped = SyncClientError.wrapping(error);
            core.log.write("notice", "live", "stream dropped", { code: wrapped.code ?? wrapped.kind, failures });
        } finally {
            clearTimeout(watchdog);
            signal.removeEventListener("abort", stop);
        }
        const backoff = core.retry.delay(Math.min(failures, 8));
        await sleep(reconnectDelay(failures, serverRetry, backoff, timing.maximumBackoffMs), signal);
    }
    return { kind: "cancelled" };
}

/**
 * Live mode (`startLive`/`stopLive`): `GET /changes` kept open, a sync on each notice (debounced; a running sync is
 * joined), reconnections with backoff resuming with `Last-Event-ID`, unsent writes pushed as it starts. It exists so
 * that another device's write reaches this replica within moments instead of at the next manual sync.
 */
export class LiveMode {
    private wanted = false;
    private running: { controller: AbortController; done: Promise<void> } | undefined;

    constructor(
        private readonly core: ClientCore,
        private readonly timing: LiveTiming
    ) {}

    get isWanted(): boolean {
        return this.wanted;
    }

    /** Live mode is wanted: it runs now if signed in, else from the next sign-in. */
    start(): void {
        this.wanted = true;
        this.resume();
    }

    /** Starts the loop when it is wanted, signed in and not running (called at sign-in too). */
    resume(): void {
        if (!this.wanted || this.running || this.core.isClosed() || !this.core.session()) return;
        const controller = new AbortController();
        const done = this.run(controller.signal).finally(() => {
            if (this.running?.controller === controller) {
                this.running = undefined;
                this.core.status.update({ live: false, liveConnected: false });
            }
        });
        this.running = { controller, done };
        this.core.status.update({ live: true });
    }

    /** Stops live mode and closes its connection (when the app goes to the background). */
    async stop(): Promise<void> {
        this.wanted = false;
        await this.halt();
    }

    /** Stops the loop, live mode still wanted (a lost network, a reconnection to do now). */
    async halt(): Promise<void> {
        const running = this.running;
        this.running = undefined;
        running?.controller.abort();
        await running?.done;
        if (!this.running) this.core.status.update({ live: false, liveConnected: false });
    }

    private async run(signal: AbortSignal): Promise<void> {
        const core = this.core;
        let lastEventId: string | undefined;
        // Writes made before live mode started (offline, or by another process) go now.
        core.schedulePush(0);
        let refusals = 0;
        for (;;) {
            const end = await followEventStream(core, this.timing, signal, {
                // A space-bound client's stream refused for good (404: the account left the space) is answered by a sync,
                // which erases the replica when the space is gone; live mode then ends.
                refusalEnds: core.space !== undefined,
                request: async (): Promise<StreamRequest> => {
                    const date = lastEventId === undefined ? await core.syncDate() : undefined;
                    return {
                        path: "/changes" + (date === undefined ? "" : `?date=${queryEscape(date)}`),
                        headers: lastEventId === undefined ? {} : ({ "Last-Event-ID": lastEventId } as Record<string, string>),
                    };
                },
                connected: (connected) => {
                    core.status.update({ liveConnected: connected });
                    // Connected again: the network is back, writes that waited leave now.
                    if (connected) core.online();
                },
                handle: async (events) => {
                    const last = [...events].reverse().find((event) => event.event === "change");
                    if (!last) return;
                    // A notice of the date the replica is at already (read while the last sync ran) needs no sync.
                    if (last.id !== undefined && last.id === (await core.syncDate())) {
                        lastEventId = last.id;
                        return;
                    }
                    // Notices in a burst make one sync; a sync already running is joined.
                    await sleep(this.timing.debounceMs, signal);
                    if (signal.aborted) return;
                    try {
                        await core.sync();
                        lastEventId = last.id ?? lastEventId;
                    } catch (error) {
                        // Reconnect (after a backoff) from the replica's own date: the server notifies again at once, so
                        // the failed sync is retried.
                        lastEventId = undefined;
                        throw error;
                    }
                },
            });
            if (end.kind !== "refused") return;
            try {
                await core.sync();
            } catch (error) {
                if (error instanceof SyncClientError && error.kind === "spaceRemoved") return;
            }
            refusals += 1;
            await sleep(Math.min(core.retry.delay(Math.min(refusals, 8)), this.timing.maximumBackoffMs), signal);
            if (signal.aborted) return;
        }
    }
}
