import { ErrorCode, SyncClientError } from "./errors.js";
import { JsonValue } from "./json.js";
import { Log } from "./logger.js";

/** The `fetch` function the client calls (the global one by default; a test or an app may wrap it). */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** One answer, read whole up to the cap. */
export class HttpAnswer {
    constructor(
        readonly status: number,
        readonly headers: Headers,
        readonly bytes: Uint8Array
    ) {}

    header(name: string): string | null {
        return this.headers.get(name);
    }

    text(): string {
        return new TextDecoder().decode(this.bytes);
    }

    /** The body as JSON; undefined when it is empty or not JSON (a proxy's HTML page). */
    json(): JsonValue | undefined {
        if (this.bytes.byteLength === 0) return undefined;
        try {
            return JSON.parse(this.text()) as JsonValue;
        } catch {
            return undefined;
        }
    }

    /** The error this answer means (undefined for a success). */
    error(): SyncClientError | undefined {
        return SyncClientError.fromAnswer(this.status, this.json(), this.header("Retry-After"));
    }
}

/**
 * Reads a body up to `limit` bytes and no further: a declared length over it is refused before any byte is read, and
 * a stream that goes past it is cancelled at once (the connection is dropped), so a broken or hostile server cannot
 * fill the device's memory. Throws `answer_too_large`. A body cut off by the network throws `offline`.
 */
export async function readCapped(response: Response, limit: number): Promise<Uint8Array> {
    const declared = response.headers.get("Content-Length");
    const encoded = response.headers.get("Content-Encoding");
    if (declared !== null && (encoded === null || encoded === "identity") && Number(declared) > limit) {
        await response.body?.cancel().catch(() => undefined);
        throw SyncClientError.answerTooLarge(response.status, limit);
    }
    if (response.body === null) return new Uint8Array(0);
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
        let piece: ReadableStreamReadResult<Uint8Array>;
        try {
            piece = await reader.read();
        } catch (error) {
            throw SyncClientError.offline(`the answer was cut off: ${describe(error)}`, error);
        }
        if (piece.done) break;
        total += piece.value.byteLength;
        if (total > limit) {
            await reader.cancel().catch(() => undefined);
            throw SyncClientError.answerTooLarge(response.status, limit);
        }
        chunks.push(piece.value);
    }
    if (chunks.length === 1) return chunks[0]!;
    const whole = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
        whole.set(chunk, offset);
        offset += chunk.byteLength;
    }
    return whole;
}

/**
 * A body read chunk by chunk under the same rules as `readCapped`: at most `limit` bytes (past it the stream is
 * cancelled and `answer_too_large` thrown), a stream cut by the network is `offline`, and the reads together wait at
 * most `budgetMs` (the call's time limit, less what its head took): past it, `offline`. The time the caller spends
 * between reads (applying what it read) does not count.
 */
export class CappedBody {
    private total = 0;
    private finished = false;

    constructor(
        private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
        private readonly status: number,
        private readonly limit: number,
        private readonly controller: AbortController,
        private budgetMs: number,
        private readonly timeoutMs: number,
        private readonly onEnd: (outcome: { bytes: number; tooLarge: boolean }) => void = () => undefined
    ) {}

    /** The bytes read so far. */
    get bytes(): number {
        return this.total;
    }

    /** The next chunk; undefined at the end of the body. */
    async next(): Promise<Uint8Array | undefined> {
        if (this.finished) return undefined;
        if (this.budgetMs <= 0) this.controller.abort();
        const started = Date.now();
        const timer = setTimeout(() => this.controller.abort(), Math.max(0, this.budgetMs));
        let piece: ReadableStreamReadResult<Uint8Array>;
        try {
            piece = await this.reader.read();
        } catch (error) {
            this.finished = true;
            if (this.controller.signal.aborted) throw SyncClientError.offline(`no answer within ${this.timeoutMs} ms`, error);
            throw SyncClientError.offline(`the answer was cut off: ${describe(error)}`, error);
        } finally {
            clearTimeout(timer);
            this.budgetMs -= Date.now() - started;
        }
        if (piece.done) {
            this.finished = true;
            this.onEnd({ bytes: this.total, tooLarge: false });
            return undefined;
        }
        this.total += piece.value.byteLength;
        if (this.total > this.limit) {
            this.finished = true;
            await this.reader.cancel().catch(() => undefined);
            this.onEnd({ bytes: this.total, tooLarge: true });
            throw SyncClientError.answerTooLarge(this.status, this.limit);
        }
        return piece.value;
    }

    /** Stops reading (the connection is dropped) if the body was not read to its end. */
    async cancel(): Promise<void> {
        if (this.finished) return;
        this.finished = true;
        await this.reader.cancel().catch(() => undefined);
    }
}

/** A 200 answer whose body is more than a threshold: its first chunks read, the rest to read from `body`. */
export interface StreamedAnswer {
    status: number;
    headers: Headers;
    /** The chunks read while deciding the answer was big, in order, before `body`'s. */
    head: Uint8Array[];
    body: CappedBody;
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
    if (chunks.length === 1) return chunks[0]!;
    const whole = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
        whole.set(chunk, offset);
        offset += chunk.byteLength;
    }
    return whole;
}

function describe(error: unknown): string {
    if (error instanceof Error) {
        const cause = (error as { cause?: unknown }).cause;
        return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
    }
    return String(error);
}

export interface RetryPolicyOptions {
    /** Attempts per call, the first included (1: never retry). Default 4. */
    attempts?: number;
    /** Default 500 ms. */
    baseDelayMs?: number;
    /** Default 30 s. A `Retry-After` longer than this is not waited for: the error goes to the caller at once. */
    maximumDelayMs?: number;
    /** How to wait (tests may record or skip the waits). */
    sleep?: (ms: number) => Promise<void>;
    /** A number in [0, 1) for the jitter. */
    random?: () => number;
}

/**
 * How the client waits before trying again after a network error, a 429 or a 5xx: exponential backoff with "equal
 * jitter", never sooner than the server's `Retry-After`, a bounded number of attempts per call (the Swift SDK's
 * `RetryPolicy`).
 */
export class RetryPolicy {
    readonly attempts: number;
    readonly baseDelayMs: number;
    readonly maximumDelayMs: number;
    readonly sleep: (ms: number) => Promise<void>;
    private readonly random: () => number;

    constructor(options: RetryPolicyOptions = {}) {
        this.attempts = options.attempts ?? 4;
        this.baseDelayMs = options.baseDelayMs ?? 500;
        this.maximumDelayMs = options.maximumDelayMs ?? 30_000;
        this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
        this.random = options.random ?? Math.random;
    }

    /** The wait before attempt `attempt + 1` (0-based): base × 2^attempt capped, half fixed half random, at least `Retry-After`. */
    delay(attempt: number, retryAfterSeconds?: number): number {
        const exponential = this.baseDelayMs * 2 ** Math.min(Math.max(attempt, 0), 16);
        const capped = Math.min(exponential, this.maximumDelayMs);
        const jittered = capped * (0.5 + 0.5 * this.random());
        return Math.max(jittered, (retryAfterSeconds ?? 0) * 1000);
    }

    /** Runs `body`, retrying the errors `retrying` accepts (by default the transient ones) with backoff. */
    async run<T>(body: () => Promise<T>, retrying: (error: SyncClientError) => boolean = (error) => error.isTransient): Promise<T> {
        for (let attempt = 0; ; attempt++) {
            try {
                return await body();
            } catch (error) {
                if (!(error instanceof SyncClientError) || !retrying(error) || attempt + 1 >= this.attempts) throw error;
                if (error.retryAfter !== undefined && error.retryAfter * 1000 > this.maximumDelayMs) throw error;
                await this.sleep(this.delay(attempt, error.retryAfter));
            }
        }
    }
}

export interface HttpCoreOptions {
    serverUrl: string;
    fetch?: FetchFunction | undefined;
    /** Most bytes of one answer read (default 64 MiB). */
    answerMaxBytes?: number | undefined;
    /** Longest a call may take, answer included (default 60 s): past it, `offline`. */
    requestTimeoutMs?: number | undefined;
    /** Allow `http://` to a host other than this machine (default false: tokens would cross the network in clear). */
    allowsInsecureHTTP?: boolean | undefined;
    /** The space a client's replica holds (protocol §15): its space's paths go under `/spaces/{space}`; none: the home space. */
    space?: string | undefined;
    log: Log;
}

export interface CallOptions {
    body?: JsonValue | undefined;
    headers?: Record<string, string> | undefined;
    /** The bearer token; none for the calls that need none (sign-in, the model, the server's description). */
    token?: string | undefined;
    /** Raw bytes to send instead of JSON (media), with their `Content-Type` in `headers`. */
    bytes?: Uint8Array | undefined;
    /** Most bytes of this answer read (default `answerMaxBytes`). */
    maxBytes?: number | undefined;
    /** false: the path is not put in the client's space (`GET /changes?spaces=all`). Default true. */
    prefixed?: boolean | undefined;
}

/** The account-level paths (protocol §15): every other path addresses a space. */
const accountPaths = new Set(["", "signup", "login", "logout", "password", "accounts", "spaces", "invitations", "model", "group", "token"]);

/** `path` (under `/api/v1`) in `space`: `/spaces/{space}` before a path of a space; account-level paths as they are. */
export function inSpace(path: string, space: string | undefined): string {
    if (space === undefined) return path;
    const first = /^\/([^/?]*)/.exec(path)?.[1] ?? "";
    return accountPaths.has(first) ? path : `/spaces/${pathEscape(space)}${path}`;
}

/**
 * The HTTP core: every call goes through `fetch`, every answer is read with a size cap, every failure becomes a
 * `SyncClientError` (problem+json answers with the server's code; no answer is `offline`).
 */
export class HttpCore {
    readonly base: string;
    readonly answerMaxBytes: number;
    private readonly fetcher: FetchFunction;
    private readonly timeoutMs: number;
    private readonly log: Log;
    /** The space whose paths this core's calls address (undefined: the home space's unprefixed paths). */
    readonly space: string | undefined;
    private readonly allowsInsecureHTTP: boolean;

    constructor(options: HttpCoreOptions) {
        let base = options.serverUrl;
        while (base.endsWith("/")) base = base.slice(0, -1);
        const url = new URL(base);
        const local = ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
        if (url.protocol !== "https:" && !(url.protocol === "http:" && (local || options.allowsInsecureHTTP))) {
            throw SyncClientError.invalid(`the server URL must be https (or http to this machine, or allowsInsecureHTTP): ${base}`);
        }
        this.base = base + "/api/v1";
        this.answerMaxBytes = options.answerMaxBytes ?? 64 * 1024 * 1024;
        this.timeoutMs = options.requestTimeoutMs ?? 60_000;
        this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
        this.log = options.log;
        this.space = options.space;
        this.allowsInsecureHTTP = options.allowsInsecureHTTP ?? false;
    }

    /**
     * A `GET` of an absolute URL of another server (media an item names on a CDN), without the session's token, read up
     * to `maxBytes`. `https` only, or `http` to this machine or with `allowsInsecureHTTP`. A transport failure is `offline`.
     */
    async getExternal(url: string, maxBytes: number): Promise<HttpAnswer> {
        const parsed = new URL(url);
        const local = ["127.0.0.1", "[::1]", "localhost"].includes(parsed.hostname);
        if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && (local || this.allowsInsecureHTTP))) {
            throw SyncClientError.invalid(`media must be https (or http to this machine): ${url}`);
        }
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), this.timeoutMs);
        try {
            let response: Response;
            try {
                response = await this.fetcher(url, { method: "GET", signal: controller.signal });
            } catch (error) {
                throw SyncClientError.offline(controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : describe(error), error);
            }
            return new HttpAnswer(response.status, response.headers, await readCapped(response, maxBytes));
        } finally {
            clearTimeout(timer);
        }
    }

    /** `path` as this core sends it: in its space, and a group's sub-requests too (`/api/v1/...` → `/api/v1/spaces/S/...`). */
    private place(path: string, body: JsonValue | undefined, prefixed: boolean): { path: string; body: JsonValue | undefined } {
        if (this.space === undefined || !prefixed) return { path, body };
        if (path === "/group" && body !== null && typeof body === "object" && !Array.isArray(body) && Array.isArray(body.requests)) {
            const requests = body.requests.map((request) => {
                if (request === null || typeof request !== "object" || Array.isArray(request) || typeof request.url !== "string") return request;
                if (!request.url.startsWith("/api/v1/")) return request;
                return { ...request, url: "/api/v1" + inSpace(request.url.slice("/api/v1".length), this.space) };
            });
            return { path, body: { ...body, requests } };
        }
        return { path: inSpace(path, this.space), body };
    }

    /**
     * Opens a streamed answer (`GET /changes`): the `Response` as soon as its head arrives (within the call timeout),
     * its body left to the caller, who stops it with `signal`.
     */
    async stream(path: string, options: { token: string; headers: Record<string, string>; signal: AbortSignal; prefixed?: boolean }): Promise<Response> {
        const placed = this.place(path, undefined, options.prefixed ?? true).path;
        const controller = new AbortController();
        const abort = (): void => controller.abort();
        if (options.signal.aborted) controller.abort();
        options.signal.addEventListener("abort", abort);
        const timer = setTimeout(abort, this.timeoutMs);
        try {
            return await this.fetcher(this.base + placed, {
                method: "GET",
                headers: { ...options.headers, Authorization: `Bearer ${options.token}` },
                signal: controller.signal,
            });
        } catch (error) {
            throw SyncClientError.offline(controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : describe(error), error);
        } finally {
            // The head is here (or never will be); the body's reads still end with the caller's signal.
            clearTimeout(timer);
        }
    }

    /** The path, headers and body `call` sends. */
    private request(pathInSpace: string, options: CallOptions): { path: string; headers: Record<string, string>; body: string | Uint8Array | undefined } {
        const placed = this.place(pathInSpace, options.body, options.prefixed ?? true);
        const headers: Record<string, string> = { Accept: "application/json", ...(options.headers ?? {}) };
        if (options.token !== undefined) headers["Authorization"] = `Bearer ${options.token}`;
        let body: string | Uint8Array | undefined;
        if (options.bytes !== undefined) {
            body = options.bytes;
        } else if (placed.body !== undefined) {
            body = JSON.stringify(placed.body);
            headers["Content-Type"] = headers["Content-Type"] ?? "application/json";
        }
        return { path: placed.path, headers, body };
    }

    /**
     * `call`, but a 200 answer whose body goes past `threshold` bytes is not read whole: its first chunks and the
     * rest of its body (capped, timed, as `call` reads it) go to the caller, who must read it to its end or cancel it.
     * Any other answer (another status, a body within the threshold) is read whole, as `call` reads it.
     */
    async callStreamed(method: string, pathInSpace: string, threshold: number, options: CallOptions = {}): Promise<HttpAnswer | StreamedAnswer> {
        const { path, headers, body } = this.request(pathInSpace, options);
        const limit = options.maxBytes ?? this.answerMaxBytes;
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), this.timeoutMs);
        const started = Date.now();
        let response: Response;
        try {
            const init: RequestInit = { method, headers, signal: controller.signal };
            if (body !== undefined) init.body = body;
            response = await this.fetcher(this.base + path, init);
        } catch (error) {
            clearTimeout(timer);
            const why = controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : describe(error);
            this.log.write("notice", "http", "no answer", { method, path: pathOnly(path), error: why });
            throw SyncClientError.offline(why, error);
        }
        clearTimeout(timer);
        const tooLarge = (): void =>
            this.log.write("warning", "http", "answer too large: not read further", { method, path: pathOnly(path), limit: this.answerMaxBytes });
        const declared = response.headers.get("Content-Length");
        const encoded = response.headers.get("Content-Encoding");
        if (declared !== null && (encoded === null || encoded === "identity") && Number(declared) > limit) {
            await response.body?.cancel().catch(() => undefined);
            tooLarge();
            throw SyncClientError.answerTooLarge(response.status, limit);
        }
        const logged = (bytes: number): void =>
            this.log.write("debug", "http", "answer", { method, path: pathOnly(path), status: response.status, bytes, ms: Date.now() - started });
        if (response.body === null) {
            logged(0);
            return new HttpAnswer(response.status, response.headers, new Uint8Array(0));
        }
        const reader = new CappedBody(response.body.getReader(), response.status, limit, controller, this.timeoutMs - (Date.now() - started), this.timeoutMs, (outcome) =>
            outcome.tooLarge ? tooLarge() : logged(outcome.bytes)
        );
        const head: Uint8Array[] = [];
        for (;;) {
            const chunk = await reader.next();
            if (chunk === undefined) return new HttpAnswer(response.status, response.headers, concat(head, reader.bytes));
            head.push(chunk);
            if (response.status === 200 && reader.bytes > threshold) return { status: response.status, headers: response.headers, head, body: reader };
        }
    }

    /** One call to `path` (under `/api/v1`), its answer read whole up to `answerMaxBytes`. A transport failure is `offline`. */
    async call(method: string, pathInSpace: string, options: CallOptions = {}): Promise<HttpAnswer> {
        const { path, headers, body } = this.request(pathInSpace, options);
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), this.timeoutMs);
        const started = Date.now();
        try {
            let response: Response;
            try {
                const init: RequestInit = { method, headers, signal: controller.signal };
                if (body !== undefined) init.body = body;
                response = await this.fetcher(this.base + path, init);
            } catch (error) {
                const why = controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : describe(error);
                this.log.write("notice", "http", "no answer", { method, path: pathOnly(path), error: why });
                throw SyncClientError.offline(why, error);
            }
            let bytes: Uint8Array;
            try {
                bytes = await readCapped(response, options.maxBytes ?? this.answerMaxBytes);
            } catch (error) {
                if (controller.signal.aborted) throw SyncClientError.offline(`no answer within ${this.timeoutMs} ms`, error);
                if (error instanceof SyncClientError && error.code === ErrorCode.answerTooLarge) {
                    this.log.write("warning", "http", "answer too large: not read further", {
                        method,
                        path: pathOnly(path),
                        limit: this.answerMaxBytes,
                    });
                }
                throw error;
            }
            this.log.write("debug", "http", "answer", {
                method,
                path: pathOnly(path),
                status: response.status,
                bytes: bytes.byteLength,
                ms: Date.now() - started,
            });
            return new HttpAnswer(response.status, response.headers, bytes);
        } finally {
            clearTimeout(timer);
        }
    }
}

/** A path without its query (a date of sync or a `lastId` stays out of the logs' labels). */
function pathOnly(path: string): string {
    const query = path.indexOf("?");
    return query < 0 ? path : path.slice(0, query);
}

/** A query value, percent-encoded. */
export function queryEscape(value: string): string {
    return encodeURIComponent(value);
}

/** A path segment (an id), percent-encoded. */
export function pathEscape(value: string): string {
    return encodeURIComponent(value);
}
