import { ErrorCode, SyncClientError } from "./errors.js";
import { FetchFunction, HttpAnswer, HttpCore, queryEscape, RetryPolicy, RetryPolicyOptions, StreamedAnswer } from "./http.js";
import { JsonStreamReader } from "./stream-json.js";
import { canonicalText, isObject, JsonObject, JsonValue, parseObject } from "./json.js";
import { Log, Logger } from "./logger.js";
import { alreadyThere, changedFields, fieldMerge, localVersion } from "./merge.js";
import { ModelCollection, serverSetFields, ServerModel, sortField } from "./model.js";
import * as replica from "./replica.js";
import { FailedOperation, MetaKey, PendingOperation } from "./replica.js";
import { migrate } from "./schema.js";
import { ClientSession, MemoryTokenStore, TokenStore } from "./session.js";
import { AsyncLock } from "./storage/lock.js";
import { ClientCore } from "./core.js";
import { AppStateLike, followAppState } from "./lifecycle.js";
import { EventStreamEnd, LiveMode, LiveTiming } from "./live.js";
import { FailedUpload, MediaQueue, MediaStore, MemoryMediaStore } from "./media.js";
import { ChangeWatchingDriver, Observers } from "./observe.js";
import { SpaceEvent, SpaceInfo, spaceInfo, SpaceInvitation, SpaceMember, Spaces } from "./spaces.js";
import { StatusCenter, SyncStatus } from "./status.js";
import { verifyAndRepair, VerifyCall, VerifyReport } from "./verify.js";
import {
    applyEndpoint,
    batches,
    firstBatchCount,
    halves,
    header,
    operationKey,
    operationPath,
    notAGroup,
    parseGroup,
    readGroupStream,
    recordSynced,
    SubRequest,
    SubResponse,
    subError,
    syncRequests,
} from "./group.js";

export { firstBatchCount } from "./group.js";
import { StorageDriver } from "./storage/driver.js";

/** The server's bounds on one call (`GET /api/v1/` `limits`, protocol §8). */
export interface ServerLimits {
    groupMaxRequests: number;
    nbMax: number;
    maxChildren: number;
    bodyMaxBytes: number;
}

/** What a sync or a push did. */
export interface SyncReport {
    /** Writes that reached the server. */
    pushed: number;
    /** Writes the server refused for good (now in `failedOperations()`). */
    failed: number;
    /** Write conflicts settled (now in `conflictJournal()`). */
    conflicts: number;
    /** The new date of sync (a sync only). */
    date?: string;
    /** The collections the sync replaced whole (`sync: false`, or `crop` for a paginated list). */
    replaced: string[];
}

/** The three versions of an item in a write conflict, for a `ConflictHandler`. */
export interface ConflictVersions {
    collection: string;
    parent: string | undefined;
    id: string;
    /** The server's version the local edit was made on (undefined: created here). */
    base: JsonObject | undefined;
    /** The local edit (undefined: a delete). */
    local: JsonObject | undefined;
    /** The server's version now (undefined: deleted on the server). */
    server: JsonObject | undefined;
}

/** How to settle a conflict: keep the server's version, write the local one over it, or write a merge. */
export type ConflictResolution = "keepServer" | "keepLocal" | { merged: JsonObject };

/** Decides a conflict for one collection; it may ask the user (within `conflictHandlerTimeoutMs`). */
export type ConflictHandler = (versions: ConflictVersions) => ConflictResolution | Promise<ConflictResolution>;

/** How a conflict was settled (the Swift SDK's `ConflictRecord.Resolution`). */
export type ConflictOutcome = "merged" | "serverKeptFields" | "keptServer" | "keptLocal" | "handlerMerged";

/** One write conflict and how it was settled: what the app shows, and what `undo` puts back. */
export interface ConflictRecord {
    seq: number;
    date: Date;
    collection: string;
    parent: string | undefined;
    itemId: string;
    /**
     * `merged`: the two sides changed different fields, both kept; `serverKeptFields`: both changed `fields`, the
     * server's values kept there and the local edit of the others; `keptServer`/`keptLocal`/`handlerMerged`: the
     * handler's choice (or, for a delete or a create on either side, the server's by default).
     */
    resolution: ConflictOutcome;
    /** The fields both sides changed (none for `merged`). */
    fields: string[];
    base: JsonObject | undefined;
    local: JsonObject | undefined;
    server: JsonObject | undefined;
    /** What the item became (undefined: deleted). */
    result: JsonObject | undefined;
}

/** What a sign-in with an identity provider found (`POST /token`, protocol §14). */
export interface IdentitySignIn {
    accountId: string;
    /** This sign-in made the account. */
    created: boolean;
    spaces: { id: string; name: string; role: string; home?: boolean }[];
}

/** Something that sends `online` events (a browser's `window`; by default `globalThis` when it can). */
export interface OnlineEvents {
    addEventListener(type: "online", listener: () => void): void;
    removeEventListener(type: "online", listener: () => void): void;
}

/** The events a client emits, with what each carries. */
export interface SyncClientEvents {
    /** A sync ended well. */
    synced: SyncReport;
    /** Writes left by themselves (an automatic push) and the queue is empty. */
    pushed: SyncReport;
    /** An automatic push failed: `offline` ones are retried with backoff, others wait for the next write or sync. */
    pushError: SyncClientError;
    /** The server refused a write for good: it is in `failedOperations()`. */
    refused: FailedOperation;
    /** A write conflict was settled: it is in `conflictJournal()`. */
    conflict: ConflictRecord;
    /** The token stopped working (401): signed out; the replica stays until the next sign-in. */
    sessionEnded: undefined;
}

export interface SyncClientOptions {
    /** The server's base URL (`https://api.example.com`); the client adds `/api/v1`. */
    serverUrl: string;
    /** Where the replica lives (`NodeSqliteDriver.open(path)` on Node). */
    storage: StorageDriver;
    /** Where the session is kept (default: memory; `FileTokenStore` on Node). */
    tokenStore?: TokenStore;
    /** The `fetch` to call (default: the global one). */
    fetch?: FetchFunction;
    /** The logger hook. */
    logger?: Logger;
    /** Backoff for network errors, 429 and 5xx. */
    retryPolicy?: RetryPolicy | RetryPolicyOptions;
    /** Items per page of a paginated list (bounded by the server's `nbMax`). Default 50. */
    pageSize?: number;
    /** Children carried per paginated item (bounded by the server's `maxChildren`). Default 10. */
    maxChildren?: number;
    /** How long after a local write its push starts (writes in a burst go together); null: writes wait for `sync()`/`push()`. Default 1000. */
    pushDelayMs?: number | null;
    /** Longest wait between two tries of an automatic push while the server cannot be reached. Default 30 s. */
    maximumPushBackoffMs?: number;
    /** Most bytes of one answer read (default 64 MiB): past it, `answer_too_large`. */
    answerMaxBytes?: number;
    /** Longest a call may take (default 60 s). */
    requestTimeoutMs?: number;
    /**
     * A sync answer longer than this many bytes (default 1 MiB) is applied as it is read, one item held at a time, in
     * the sync's transaction (a first sync of a big list stays within a few tens of MiB); a shorter one is read whole
     * and parsed at once (faster for small answers). Either way the answer applies whole or not at all.
     */
    streamAnswersOverBytes?: number;
    /** Allow `http://` to a host other than this machine. */
    allowsInsecureHTTP?: boolean;
    /** How often a sync reads the server's model again (default 1 h); also at sign-in and at the first sync of a launch. */
    modelCheckIntervalMs?: number;
    /** How long a conflict handler may take; past it the server's values of the fields both sides changed are kept. Default 30 s. */
    conflictHandlerTimeoutMs?: number;
    /** Where `online` events come from (default `globalThis` when it has `addEventListener`); null: none. */
    onlineEvents?: OnlineEvents | null;
    /** The space this replica holds (protocol §15): a space id from `spaces()`; none: the account's home space. One replica per space (`forSpace`). */
    space?: string;
    /** The app's foreground and background (`reactNativeAppState(AppState)`, `documentVisibility(document)`): writes leave and live mode reopens in the foreground, live mode closes in the background. */
    appState?: AppStateLike;
    /** How long live mode waits after a notice before it syncs (notices in a burst make one sync). Default 200 ms. */
    liveDebounceMs?: number;
    /** Longest wait between two live reconnections (never shorter than 1 s, whatever the server's `retry:`). Default 30 s. */
    liveMaximumBackoffMs?: number;
    /** A live stream silent this long (the server pings every 20 s) is dropped and opened again. Default 60 s. */
    liveIdleTimeoutMs?: number;
    /** Where media bytes live: uploads waiting and the download cache (default: memory; `FileMediaStore` on Node). */
    mediaStore?: MediaStore;
    /** Largest medium uploaded or downloaded (the server's default, 20 MiB). */
    mediaMaxBytes?: number;
    /** Most bytes of downloaded media kept (least recently used out first); uploads waiting are kept whatever their size. Default 200 MiB. */
    mediaCacheBytes?: number;
}

function emptyReport(): SyncReport {
    return { pushed: 0, failed: 0, conflicts: 0, replaced: [] };
}

/**
 * The client: an exact offline replica of a space's data, kept by delta sync (one `POST /group` per sync), with local
 * writes applied at once and queued, pushed by themselves. The TypeScript port of the Swift SDK's `SyncClient`: same
 * wire rules, same replica file, same queue, same merge.
 */
export class SyncClient {
    private readonly http: HttpCore;
    private readonly db: StorageDriver;
    private readonly tokenStore: TokenStore;
    private readonly retry: RetryPolicy;
    private readonly log: Log;
    private readonly options: SyncClientOptions;
    private session: ClientSession | undefined;
    private model: ServerModel | undefined;
    private modelCheckedAt: number | undefined;
    /** One network operation on the replica at a time (sync, push, sign-in's adoption, logout). */
    private readonly work = new AsyncLock();
    private runningSync: Promise<SyncReport> | undefined;
    private readonly listeners = new Map<keyof SyncClientEvents, Set<(value: never) => void>>();
    private readonly conflictHandlers = new Map<string, ConflictHandler>();
    private pushTimer: ReturnType<typeof setTimeout> | undefined;
    private pushing: Promise<void> | undefined;
    private wakers = new Set<() => void>();
    private closed = false;
    private readonly onOnline = (): void => this.online();
    private readonly onlineEvents: OnlineEvents | undefined;
    private readonly core: ClientCore;
    private readonly statusCenter = new StatusCenter();
    private readonly observers: Observers;
    private readonly liveMode: LiveMode;
    private readonly liveTiming: LiveTiming;
    private readonly mediaQueue: MediaQueue;
    private readonly spaceCalls: Spaces;
    private stopAppState: (() => void) | undefined;

    private constructor(options: SyncClientOptions, log: Log) {
        this.options = options;
        this.log = log;
        this.http = new HttpCore({
            serverUrl: options.serverUrl,
            fetch: options.fetch,
            answerMaxBytes: options.answerMaxBytes,
            requestTimeoutMs: options.requestTimeoutMs,
            allowsInsecureHTTP: options.allowsInsecureHTTP,
            space: options.space,
            log,
        });
        const watched = new ChangeWatchingDriver(options.storage);
        this.db = watched;
        this.tokenStore = options.tokenStore ?? new MemoryTokenStore();
        this.retry = options.retryPolicy instanceof RetryPolicy ? options.retryPolicy : new RetryPolicy(options.retryPolicy);
        const events = options.onlineEvents === undefined ? defaultOnlineEvents() : (options.onlineEvents ?? undefined);
        this.onlineEvents = events;
        this.core = {
            http: this.http,
            db: this.db,
            log,
            retry: this.retry,
            status: this.statusCenter,
            space: options.space,
            session: () => this.session,
            isClosed: () => this.closed,
            call: (method, path, body, headers, maxBytes) => this.call(method, path, body, headers, maxBytes),
            sessionEnded: () => this.sessionEnded(),
            sync: () => this.sync(),
            schedulePush: (delayMs) => this.schedulePush(delayMs),
            online: () => this.online(),
            syncDate: () => this.syncDate(),
        };
        this.observers = new Observers(watched, () => this.refreshCounts());
        this.liveTiming = {
            debounceMs: options.liveDebounceMs ?? 200,
            maximumBackoffMs: options.liveMaximumBackoffMs ?? 30_000,
            idleTimeoutMs: options.liveIdleTimeoutMs ?? 60_000,
        };
        this.liveMode = new LiveMode(this.core, this.liveTiming);
        const mediaLimits = { maxBytes: options.mediaMaxBytes ?? 20 * 1024 * 1024, cacheBytes: options.mediaCacheBytes ?? 200 * 1024 * 1024 };
        this.mediaQueue = new MediaQueue(this.core, options.mediaStore ?? new MemoryMediaStore(), mediaLimits);
        this.spaceCalls = new Spaces(this.core, (space) => this.adoptHomeIfNone(space));
    }

    /**
     * Opens a client on its storage: brings the replica's schema forward, reads the model and the session it kept, and
     * starts pushing writes that were waiting.
     */
    static async open(options: SyncClientOptions): Promise<SyncClient> {
        const log = new Log(options.logger);
        const client = new SyncClient(options, log);
        const unknown = await migrate(client.db);
        if (unknown.length > 0) {
            log.write("notice", "replica", "the replica was migrated by a newer SDK", { migrations: unknown.join(",") });
        }
        const stored = await replica.getMeta(client.db, MetaKey.model);
        if (stored !== undefined) {
            try {
                client.model = ServerModel.parse(stored);
            } catch {
                // Read again at the next sync.
            }
        }
        client.session = await client.tokenStore.load();
        client.statusCenter.update({ signedIn: client.session !== undefined });
        await client.refreshCounts();
        client.onlineEvents?.addEventListener("online", client.onOnline);
        if (options.appState) {
            client.stopAppState = followAppState(options.appState, {
                foreground: () => {
                    client.online();
                    client.liveMode.resume();
                },
                background: () => {
                    void client.liveMode.halt();
                    client.online();
                },
            });
        }
        if (client.session && (await replica.hasQueued(client.db))) client.schedulePush();
        return client;
    }

    /** Stops the client's timers and listeners and waits for the work that runs; the storage stays open (the app closes it). */
    async close(): Promise<void> {
        this.closed = true;
        this.stopAppState?.();
        await this.liveMode.halt();
        this.onlineEvents?.removeEventListener("online", this.onOnline);
        if (this.pushTimer !== undefined) clearTimeout(this.pushTimer);
        this.pushTimer = undefined;
        for (const wake of this.wakers) wake();
        await this.pushing;
        await this.work.run(async () => undefined);
        await this.observers.settled();
    }

    // MARK: - Events

    /** Calls `listener` for each `event`; answers the function that stops it. */
    on<K extends keyof SyncClientEvents>(event: K, listener: (value: SyncClientEvents[K]) => void): () => void {
        const set = this.listeners.get(event) ?? new Set();
        set.add(listener as (value: never) => void);
        this.listeners.set(event, set);
        return () => set.delete(listener as (value: never) => void);
    }

    private emit<K extends keyof SyncClientEvents>(event: K, value: SyncClientEvents[K]): void {
        for (const listener of [...(this.listeners.get(event) ?? [])]) {
            try {
                (listener as (value: SyncClientEvents[K]) => void)(value);
            } catch {
                // A listener never breaks the client.
            }
        }
    }

    // MARK: - Session

    /** The session, if signed in. */
    get currentSession(): ClientSession | undefined {
        return this.session ? { ...this.session } : undefined;
    }

    get isSignedIn(): boolean {
        return this.session !== undefined;
    }

    /**
     * Creates a family (a space) and its first account, and signs in (`POST /signup`). Refused with `unpushedWrites`
     * while writes of the replica wait to be pushed, unless `discardingPendingWrites`.
     */
    async signUp(args: { family: string; username: string; password: string; discardingPendingWrites?: boolean }): Promise<void> {
        if (!args.discardingPendingWrites) {
            const waiting = await this.pendingOperations();
            if (waiting.length > 0) throw this.unpushed(waiting);
        }
        const answer = await this.signInCall("/signup", { family: args.family, username: args.username, password: args.password });
        await this.adoptGrant(answer, 201, args.discardingPendingWrites ?? false);
    }

    /**
     * Signs in to an existing account (`POST /login`). The same account keeps the replica and its writes; another
     * account erases it first (refused with `unpushedWrites` while writes wait, unless `discardingPendingWrites`).
     */
    async logIn(args: { username: string; password: string; discardingPendingWrites?: boolean }): Promise<void> {
        const answer = await this.signInCall("/login", { username: args.username, password: args.password });
        await this.adoptGrant(answer, 200, args.discardingPendingWrites ?? false);
    }

    /**
     * Signs in with an ID token of one of the server's identity providers (`POST /token`, protocol §14). The first
     * sign-in of an identity makes its account, with a home space named `space` when given. A refused token throws
     * `idTokenRefused` with the failed check in `check`.
     */
    async signIn(args: { idToken: string; space?: string; discardingPendingWrites?: boolean }): Promise<IdentitySignIn> {
        const body: JsonObject = { idToken: args.idToken };
        if (args.space !== undefined) body.space = args.space;
        const answer = await this.signInCall("/token", body);
        if (answer.status === 401) {
            const json = answer.json();
            const detail = isObject(json) && typeof json.detail === "string" ? json.detail : "";
            const check = /\(([^)]*)\)/.exec(detail)?.[1];
            const init: { status: number; code: string; detail: string; check?: string } = { status: 401, code: ErrorCode.invalidCredentials, detail };
            if (check !== undefined) init.check = check;
            throw new SyncClientError("idTokenRefused", `the ID token was refused: ${detail}`, init);
        }
        const grant = answer.json();
        if (
            answer.status !== 200 ||
            !isObject(grant) ||
            typeof grant.token !== "string" ||
            typeof grant.accountId !== "string" ||
            !Array.isArray(grant.spaces)
        ) {
            throw answer.error() ?? SyncClientError.invalidAnswer("POST /token answered no grant", answer.status);
        }
        let spaces = grant.spaces.filter(isObject).map(spaceInfo);
        if (spaces.length > 1) {
            // The home space (the unprefixed paths'): the one `GET /spaces` marks.
            const listed = await this.http.call("GET", "/spaces", { token: grant.token });
            const json = listed.json();
            if (listed.status !== 200 || !Array.isArray(json)) throw listed.error() ?? SyncClientError.invalidAnswer("GET /spaces");
            spaces = json.filter(isObject).map(spaceInfo);
        }
        const home = spaces.length === 1 ? spaces[0]!.id : (spaces.find((space) => space.home === true)?.id ?? "");
        const session: ClientSession = { token: grant.token, accountID: grant.accountId, familyID: home };
        if (typeof grant.expiresAt === "string") session.expiresAt = grant.expiresAt;
        await this.adopt(session, args.discardingPendingWrites ?? false);
        return { accountId: grant.accountId, created: grant.created === true, spaces };
    }

    /**
     * Signs out: pushes unsent writes first (unless `discardingPendingWrites`; when some cannot be pushed it throws
     * `unpushedWrites` and stays signed in), revokes the token, erases the replica's data. Failed writes are kept for
     * the same account's next sign-in unless `erasingFailedWrites`.
     */
    async logOut(args: { discardingPendingWrites?: boolean; erasingFailedWrites?: boolean } = {}): Promise<void> {
        if (!args.discardingPendingWrites && (await replica.hasQueued(this.db))) {
            await this.push().catch(() => undefined);
            const left = await this.pendingOperations();
            if (left.length > 0) throw this.unpushed(left);
        }
        // The session goes first: a push waiting for its next try stops, and none starts.
        const session = this.session;
        this.session = undefined;
        this.cancelScheduledPush();
        for (const wake of this.wakers) wake();
        await this.pushing;
        if (session) {
            // Offline: the token is forgotten here; it expires on the server.
            await this.http.call("POST", "/logout", { token: session.token }).catch(() => undefined);
        }
        await this.work.run(async () => {
            await this.tokenStore.clear();
            this.session = undefined;
            await this.db.transaction((tx) => replica.eraseData(tx, !args.erasingFailedWrites));
            await this.mediaQueue.erase();
        });
        await this.liveMode.halt();
        this.statusCenter.update({ signedIn: false, state: "idle", lastError: undefined });
        this.log.write("info", "session", "signed out");
    }

    private unpushed(waiting: PendingOperation[]): SyncClientError {
        return new SyncClientError(
            "unpushedWrites",
            `${waiting.length} writes have not reached the server: retry when online, or discard them (discardingPendingWrites)`,
            { pending: waiting }
        );
    }

    /** A sign-in call with no token. A throttled one (429) is never retried (the server says "stop guessing"); a busy one (5xx) is. */
    private async signInCall(path: string, body: JsonObject): Promise<HttpAnswer> {
        return this.retry.run(
            async () => {
                const answer = await this.http.call("POST", path, { body });
                if (answer.status >= 500) throw answer.error()!;
                return answer;
            },
            (error) => error.isTransient && error.status !== 429
        );
    }

    private async adoptGrant(answer: HttpAnswer, expected: number, discarding: boolean): Promise<void> {
        const grant = answer.json();
        if (
            answer.status !== expected ||
            !isObject(grant) ||
            typeof grant.token !== "string" ||
            typeof grant.accountId !== "string" ||
            typeof grant.familyId !== "string"
        ) {
            throw answer.error() ?? SyncClientError.invalidAnswer("the sign-in answered no grant", answer.status);
        }
        const session: ClientSession = { token: grant.token, accountID: grant.accountId, familyID: grant.familyId };
        if (typeof grant.expiresAt === "string") session.expiresAt = grant.expiresAt;
        await this.adopt(session, discarding);
    }

    /** Makes a grant the client's session: the same account keeps the replica; another erases it (refused while writes wait). */
    private async adopt(next: ClientSession, discarding: boolean): Promise<void> {
        let erased = false;
        const unsent = await this.work.run(() =>
            this.db.transaction(async (tx) => {
                if ((await replica.getMeta(tx, MetaKey.account)) === next.accountID) return [];
                const waiting = await replica.pending(tx);
                if (waiting.length > 0 && !discarding) return waiting;
                erased = true;
                await replica.eraseData(tx, false);
                await tx.run("DELETE FROM uploads");
                await replica.setMeta(tx, MetaKey.account, next.accountID);
                return [];
            })
        );
        if (unsent.length > 0) {
            // The grant is not used: its token is revoked (best effort).
            await this.http.call("POST", "/logout", { token: next.token }).catch(() => undefined);
            throw this.unpushed(unsent);
        }
        // Another account's media go with its data.
        if (erased) await this.mediaQueue.erase();
        await this.tokenStore.save(next);
        this.session = next;
        this.statusCenter.update({ signedIn: true });
        this.log.write("info", "session", "signed in", { account: next.accountID, space: next.familyID });
        // The server's model and limits, read with the session (a sync reads them anyway if this fails).
        await this.serverModel(true).catch(() => undefined);
        await this.limits(true).catch(() => undefined);
        if (await replica.hasQueued(this.db)) this.schedulePush();
        this.liveMode.resume();
    }

    /** The token stopped working (logout elsewhere, password change, expiry): the session is forgotten; the replica stays. */
    private async sessionEnded(): Promise<void> {
        if (!this.session) return;
        this.log.write("notice", "session", "session ended by the server (401): signed out");
        this.session = undefined;
        await this.tokenStore.clear().catch(() => undefined);
        this.statusCenter.update({ signedIn: false });
        this.emit("sessionEnded", undefined);
    }

    // MARK: - Calls

    /** One authenticated call; a 401 ends the session (`notSignedIn`). */
    private async call(method: string, path: string, body?: JsonValue, headers?: Record<string, string>, maxBytes?: number): Promise<HttpAnswer> {
        const session = this.session;
        if (!session) throw SyncClientError.notSignedIn();
        const answer = await this.http.call(method, path, { body, headers, token: session.token, maxBytes });
        if (answer.status === 401) {
            await this.sessionEnded();
            throw SyncClientError.notSignedIn();
        }
        return answer;
    }

    /** `call`, a 200 answer longer than `streamAnswersOverBytes` left to read as a stream. */
    private async callStreamed(method: string, path: string, body: JsonValue): Promise<HttpAnswer | StreamedAnswer> {
        const session = this.session;
        if (!session) throw SyncClientError.notSignedIn();
        const answer = await this.http.callStreamed(method, path, this.options.streamAnswersOverBytes ?? 1024 * 1024, { body, token: session.token });
        if (answer.status === 401) {
            if (!(answer instanceof HttpAnswer)) await answer.body.cancel();
            await this.sessionEnded();
            throw SyncClientError.notSignedIn();
        }
        return answer;
    }

    /** One `POST /group`; its sub-responses by id. A 401 anywhere means the session is gone. */
    private async group(requests: SubRequest[]): Promise<Map<string, SubResponse>> {
        const answer = await this.call("POST", "/group", { requests: requests as unknown as JsonValue });
        if (answer.status !== 200) throw answer.error() ?? SyncClientError.from(answer.status, answer.json(), null);
        const responses = parseGroup(answer.json());
        if ([...responses.values()].some((response) => response.status === 401)) {
            await this.sessionEnded();
            throw SyncClientError.notSignedIn();
        }
        return responses;
    }

    /**
     * The server's model (`GET /api/v1/model`, protocol §12), kept in the replica; read again when none is kept, at the
     * first call of a launch, once `modelCheckIntervalMs` has passed, or when `refresh` says so. A changed model drops
     * the kept limits (read again at their next use).
     */
    async serverModel(refresh = false): Promise<ServerModel> {
        const interval = this.options.modelCheckIntervalMs ?? 3_600_000;
        if (this.model && !refresh && this.modelCheckedAt !== undefined && Date.now() - this.modelCheckedAt < interval) return this.model;
        const answer = await this.http.call("GET", "/model");
        if (answer.status !== 200) throw answer.error() ?? SyncClientError.from(answer.status, undefined, null);
        const text = answer.text();
        const model = ServerModel.parse(text);
        if (model.digest !== this.model?.digest) {
            await this.db.transaction(async (tx) => {
                await replica.setMeta(tx, MetaKey.model, text);
                await replica.setMeta(tx, MetaKey.limits, undefined);
            });
        }
        this.model = model;
        this.modelCheckedAt = Date.now();
        return model;
    }

    /** The model as last read (kept in the replica), if any. */
    get knownModel(): ServerModel | undefined {
        return this.model;
    }

    /** The server's limits (`GET /api/v1/`), kept in the replica, read again when `refresh` says so. */
    async limits(refresh = false): Promise<ServerLimits> {
        if (!refresh) {
            const stored = parseObject(await replica.getMeta(this.db, MetaKey.limits));
            const limits = stored ? readLimits(stored) : undefined;
            if (limits) return limits;
        }
        const answer = await this.http.call("GET", "/");
        const json = answer.json();
        const limits = answer.status === 200 && isObject(json) && isObject(json.limits) ? readLimits(json.limits) : undefined;
        if (!limits) throw answer.error() ?? SyncClientError.invalidAnswer("the server's description has no limits");
        await replica.setMeta(this.db, MetaKey.limits, canonicalText(limits as unknown as JsonObject));
        return limits;
    }

    // MARK: - Reads

    /** The items of a collection as the app sees them: the server's JSON with unsent edits on top, in the server's order for paginated and child collections (newest first), by id otherwise. Children need `parent`. */
    async items(collection: string, options: { parent?: string } = {}): Promise<JsonObject[]> {
        const layout = this.model?.collections.get(collection);
        const sorted = this.model ? layout !== undefined && sortField(layout) !== undefined : undefined;
        const texts = await replica.visibleTexts(this.db, collection, options.parent, sorted);
        return texts.map(parseObject).filter((item): item is JsonObject => item !== null);
    }

    /** One item as `items` shows it (undefined when absent or deleted locally). */
    async item(collection: string, id: string, options: { parent?: string } = {}): Promise<JsonObject | undefined> {
        return replica.visibleItem(this.db, collection, id, options.parent);
    }

    /** A singleton (`family`, `settings`): its id is the session's (the space's, or the account's for an account-scoped one). */
    async singleton(collection: string): Promise<JsonObject | undefined> {
        const layout = this.writable(collection, undefined);
        return this.item(collection, this.itemId(layout, ""));
    }

    /** Whether the replica holds the whole list (`nomore`): a paginated list, or the children of one parent. */
    async hasAll(list: string, options: { parent?: string } = {}): Promise<boolean> {
        return replica.getFlag(this.db, MetaKey.nomore(list, options.parent));
    }

    /** The date of sync the replica is at (undefined before its first sync). */
    async syncDate(): Promise<string | undefined> {
        return replica.getMeta(this.db, MetaKey.date);
    }

    /** How many server items a top-level list holds (unsent creations aside). */
    async heldCount(collection: string): Promise<number> {
        return replica.serverCount(this.db, collection);
    }

    /** The writes waiting to reach the server, in push order. */
    async pendingOperations(): Promise<PendingOperation[]> {
        return replica.pending(this.db);
    }

    /** The writes the server refused for good, oldest first, each with the server's status, code and detail. */
    async failedOperations(): Promise<FailedOperation[]> {
        return replica.failed(this.db);
    }

    /** Forgets the failed writes (after the app showed them). */
    async clearFailedOperations(): Promise<void> {
        await this.db.run("DELETE FROM failed");
    }

    // MARK: - Writes

    /**
     * Saves an item the way a typed model is saved (the item holds its `id`): for an item the server has, only the
     * fields that differ from the replica's version are queued, as a JSON Merge Patch sent with its base's `If-Match`
     * (protocol §2: a field a newer app version added, or one another device changed since, is never erased); a new
     * item is a PUT. Applied to the replica at once; the push leaves by itself.
     */
    async save(collection: string, item: JsonObject, options: { parent?: string } = {}): Promise<void> {
        if (typeof item.id !== "string" && this.model?.collections.get(collection)?.kind !== "singleton") {
            throw SyncClientError.invalid(`a saved ${collection} item needs a string id`);
        }
        const layout = this.writable(collection, options.parent);
        const id = this.itemId(layout, typeof item.id === "string" ? item.id : "");
        const parent = options.parent ?? "";
        await this.db.transaction(async (tx) => {
            const rows = await tx.query("SELECT server IS NOT NULL AS onServer FROM items WHERE collection = ? AND parent = ? AND id = ?", [
                collection,
                parent,
                id,
            ]);
            const current = await replica.visibleItem(tx, collection, id, options.parent);
            if (Number(rows[0]?.onServer ?? 0) !== 1 || !current) {
                await replica.saveLocal(tx, layout, id, parent, item);
                return;
            }
            const changes = changedFields(item, current, serverSetFields(layout));
            if (Object.keys(changes).length > 0) await replica.patchLocal(tx, layout, id, parent, changes);
        });
        this.schedulePush();
    }

    /** Creates or replaces an item (`PUT`, the whole state as given). For an item whose fields the app may not all know, prefer `save` or `patch`. */
    async put(collection: string, id: string, json: JsonObject, options: { parent?: string } = {}): Promise<void> {
        const layout = this.writable(collection, options.parent);
        const itemId = this.itemId(layout, id);
        await this.db.transaction((tx) => replica.saveLocal(tx, layout, itemId, options.parent ?? "", json));
        this.schedulePush();
    }

    /** Changes some fields (`PATCH`, a JSON Merge Patch: `null` removes an optional field), applied at once and queued. */
    async patch(collection: string, id: string, fields: JsonObject, options: { parent?: string } = {}): Promise<void> {
        const layout = this.writable(collection, options.parent);
        const itemId = this.itemId(layout, id);
        await this.db.transaction((tx) => replica.patchLocal(tx, layout, itemId, options.parent ?? "", fields));
        this.schedulePush();
    }

    /** Deletes an item locally at once and queues its DELETE (an item never pushed simply disappears). */
    async delete(collection: string, id: string, options: { parent?: string } = {}): Promise<void> {
        const layout = this.writable(collection, options.parent);
        if (layout.kind === "singleton") throw SyncClientError.invalid(`${collection} cannot be deleted`);
        await this.db.transaction((tx) => replica.deleteLocal(tx, collection, id, options.parent ?? ""));
        this.schedulePush();
    }

    /** The model's entry for a collection the app writes, checked: of the model, not read-only, with a parent exactly when a child. */
    private writable(collection: string, parent: string | undefined): ModelCollection {
        if (collection === "accounts") throw SyncClientError.invalid("accounts are read-only");
        if (!this.model) return { name: collection, kind: parent === undefined ? "list" : "child", authored: false, readOnly: false, fields: {} };
        const layout = this.model.require(collection);
        if (layout.readOnly) throw SyncClientError.invalid(`${collection} is read-only`);
        if ((layout.kind === "child") !== (parent !== undefined)) {
            throw SyncClientError.invalid(`${collection} ${layout.kind === "child" ? "needs a parent" : "takes no parent"}`);
        }
        return layout;
    }

    /** A singleton's id is the session's: the space's for a family-scoped one, the account's for the other. */
    private itemId(layout: ModelCollection, id: string): string {
        if (layout.kind !== "singleton" || !this.session) return id;
        return layout.scope === "account" ? this.session.accountID : (this.options.space ?? this.session.familyID);
    }

    // MARK: - Conflicts

    /** Sets the hook that settles write conflicts of one collection. Without one, fields only one side changed are merged, and the server wins the others. */
    setConflictHandler(collection: string, handler: ConflictHandler | undefined): void {
        if (handler) this.conflictHandlers.set(collection, handler);
        else this.conflictHandlers.delete(collection);
    }

    /** The write conflicts settled so far, oldest first. */
    async conflictJournal(): Promise<ConflictRecord[]> {
        const rows = await this.db.query("SELECT * FROM conflicts ORDER BY seq");
        return rows.map((row) => {
            const object = (column: string): JsonObject | undefined => parseObject(row[column] as string | null) ?? undefined;
            const fields = String(row.fields);
            const parent = String(row.parent);
            return {
                seq: Number(row.seq),
                date: new Date(Number(row.atMs)),
                collection: String(row.collection),
                parent: parent === "" ? undefined : parent,
                itemId: String(row.id),
                resolution: String(row.resolution) as ConflictOutcome,
                fields: fields === "" ? [] : fields.split(","),
                base: object("base"),
                local: object("local"),
                server: object("server"),
                result: object("result"),
            };
        });
    }

    /** Forgets the journal (after the app showed it). */
    async clearConflictJournal(): Promise<void> {
        await this.db.run("DELETE FROM conflicts");
    }

    /** Puts the local edit of a settled conflict back: saved again (and pushed) over what the item is now; a local delete is deleted again. */
    async undo(record: ConflictRecord): Promise<void> {
        const options = record.parent === undefined ? {} : { parent: record.parent };
        if (record.local) await this.put(record.collection, record.itemId, record.local, options);
        else await this.delete(record.collection, record.itemId, options);
    }

    // MARK: - Push

    /** Pushes the queue now, retrying network errors, 429 and 5xx with backoff (a sync pushes first anyway). */
    async push(): Promise<SyncReport> {
        return this.work.run(() => this.retry.run(() => this.pushQueue()));
    }

    /** The network is back (a browser's `online` event, or the app's own signal): queued writes leave now. */
    online(): void {
        if (this.closed) return;
        for (const wake of this.wakers) wake();
        this.wakers.clear();
        if (this.pushing === undefined && this.session) {
            void replica.hasQueued(this.db).then((queued) => {
                if (queued) this.schedulePush(0);
            });
        }
    }

    /** Pushes the queue `delayMs` from now (default `pushDelayMs`): writes in a burst join the push already waiting. */
    private schedulePush(delayMs?: number): void {
        const delay = delayMs ?? this.options.pushDelayMs;
        if (delay === null || this.closed || !this.session) return;
        if (this.pushTimer !== undefined || this.pushing !== undefined) return;
        this.pushTimer = setTimeout(() => {
            this.pushTimer = undefined;
            this.pushing = this.pushUntilEmpty().finally(() => {
                this.pushing = undefined;
                // A write that came while the last pass ran: one more pass.
                if (!this.closed && this.session) {
                    void replica.hasQueued(this.db).then((queued) => {
                        if (queued) this.schedulePush();
                    });
                }
            });
        }, delay ?? 1000);
    }

    private cancelScheduledPush(): void {
        if (this.pushTimer !== undefined) clearTimeout(this.pushTimer);
        this.pushTimer = undefined;
    }

    /** Pushes until the queue is empty, retrying with backoff while the server cannot be reached (an `online` event cuts the wait short). */
    private async pushUntilEmpty(): Promise<void> {
        let failures = 0;
        while (!this.closed && this.session && (await replica.hasQueued(this.db))) {
            try {
                const report = await this.work.run(() => this.pushQueue());
                this.log.write("info", "push", "writes pushed", { pushed: report.pushed, failed: report.failed, conflicts: report.conflicts });
                this.statusCenter.update({ state: "idle", lastError: undefined });
                this.emit("pushed", report);
                return;
            } catch (error) {
                const wrapped = SyncClientError.wrapping(error);
                this.statusCenter.update({ state: wrapped.isTransient ? "offline" : "error", lastError: wrapped });
                this.emit("pushError", wrapped);
                if (!wrapped.isTransient) {
                    this.log.write("warning", "push", "push failed", { code: wrapped.code ?? wrapped.kind });
                    return;
                }
                failures += 1;
                const wait = Math.min(this.retry.delay(Math.min(failures, 8), wrapped.retryAfter), this.options.maximumPushBackoffMs ?? 30_000);
                this.log.write("notice", "push", "server unreachable: push retried", { ms: Math.round(wait), failures });
                await this.sleepOrWake(wait);
            }
        }
    }

    private sleepOrWake(ms: number): Promise<void> {
        // Closed: no sleep. A push whose request was in flight when close() woke the sleepers, and then failed, would
        // otherwise sleep its whole backoff (minutes) while close() waits for it.
        if (this.closed) return Promise.resolve();
        return new Promise((resolve) => {
            const done = (): void => {
                clearTimeout(timer);
                this.wakers.delete(done);
                resolve();
            };
            const timer = setTimeout(done, ms);
            this.wakers.add(done);
        });
    }

    /**
     * One pass over the queue, in order, in groups within the server's limits. A transient error stops the pass (the
     * rest stays queued, in order); a permanent refusal moves the write to the failed list and the pass goes on.
     */
    private async pushQueue(): Promise<SyncReport> {
        if (!this.session) throw SyncClientError.notSignedIn();
        const report = emptyReport();
        // Media first: an item never reaches the server before the medium it names. Uploads count as pushed, as in the
        // Swift SDK's report (the conformance suite compares them).
        report.pushed += await this.mediaQueue.push();
        const model = await this.serverModel();
        const fitting = { limits: await this.limits(), refreshed: false };
        // A conflict settled as "keep local" or merged goes round again with the server's new ETag; three rounds at most.
        for (let round = 0; round < 3; round++) {
            if (!(await replica.hasQueued(this.db))) break;
            const operations = await this.db.transaction((tx) => replica.takeForPush(tx));
            if (operations.length === 0) break;
            let rest = operations;
            while (rest.length > 0) {
                const count = firstBatchCount(rest, fitting.limits);
                await this.pushFitting(rest.slice(0, count), model, fitting, report);
                rest = rest.slice(count);
            }
        }
        return report;
    }

    /**
     * Pushes `batch`; when the server refuses the group for its size (its limits went down) the limits are read again
     * (once per push) and what is left is pushed in groups that fit, halved while refused; a single write refused for
     * its own size (413) moves to the failed list.
     */
    private async pushFitting(
        batch: PendingOperation[],
        model: ServerModel,
        fitting: { limits: ServerLimits; refreshed: boolean },
        report: SyncReport
    ): Promise<void> {
        try {
            await this.pushBatch(batch, model, report);
        } catch (error) {
            if (!(error instanceof SyncClientError) || !error.refusesGroupSize) throw error;
            const keys = new Set(batch.map(operationKey));
            const left = (await replica.pending(this.db)).filter((op) => keys.has(operationKey(op)));
            if (left.length === 0) return;
            let parts: PendingOperation[][];
            if (!fitting.refreshed) {
                fitting.refreshed = true;
                fitting.limits = await this.limits(true);
                parts = batches(left, fitting.limits);
                if (parts.length === 1 && left.length > 1) parts = halves(left);
            } else if (left.length > 1) {
                parts = halves(left);
            } else {
                if (error.status !== 413) throw error;
                await this.refuse(left[0]!, error.status, error.code ?? ErrorCode.payloadTooLarge, error.detail, report);
                return;
            }
            for (const part of parts) await this.pushFitting(part, model, fitting, report);
        }
    }

    /** Pushes one group of writes (after a group of reads for the ETags it lacks). */
    private async pushBatch(batch: PendingOperation[], model: ServerModel, report: SyncReport): Promise<void> {
        // A collection the model no longer has is written as a list: the server refuses it, and the write fails.
        const layouts = batch.map(
            (op) =>
                model.collections.get(op.collection) ?? {
                    name: op.collection,
                    kind: "list" as const,
                    authored: false,
                    readOnly: false,
                    fields: {},
                }
        );
        const bases: { server: JsonObject | undefined; etag: string | undefined }[] = [];
        for (const op of batch) bases.push(await replica.base(this.db, op));
        // The ETag of an item pulled by a sync is not known (sync answers carry none): read first; a version that moved
        // since the base is a conflict, settled before writing.
        const unknown = batch.map((_, index) => index).filter((index) => bases[index]!.server !== undefined && bases[index]!.etag === undefined);
        const settled = new Set<number>();
        if (unknown.length > 0) {
            const answers = await this.group(unknown.map((index) => ({ id: `${index}`, method: "GET", url: "/api/v1" + operationPath(batch[index]!, layouts[index]!) })));
            for (const index of unknown) {
                const answer = answers.get(`${index}`);
                if (!answer) continue;
                const op = batch[index]!;
                const layout = layouts[index]!;
                const server = answer.status === 200 && isObject(answer.body) ? answer.body : undefined;
                const stored = (item: JsonObject | undefined): string | undefined => (item ? canonicalText(replica.storedItem(layout, item)) : undefined);
                if (answer.status === 200 && stored(server) === stored(bases[index]!.server)) {
                    bases[index]!.etag = header(answer, "ETag");
                } else if (answer.status === 200 || answer.status === 404) {
                    if (alreadyThere(op, server, serverSetFields(layout))) {
                        await this.db.transaction((tx) => replica.landed(tx, model, op, layout, server, header(answer, "ETag")));
                        report.pushed += 1;
                    } else {
                        await this.settle(op, layout, model, bases[index]!.server, server, header(answer, "ETag"));
                        report.conflicts += 1;
                    }
                    settled.add(index);
                } else {
                    const error = subError(answer);
                    if (error.isTransient) throw error;
                }
            }
        }
        const writes = batch.map((_, index) => index).filter((index) => !settled.has(index));
        if (writes.length === 0) return;
        const requests = writes.map((index): SubRequest => {
            const op = batch[index]!;
            const headers: Record<string, string> = {};
            const etag = bases[index]!.etag;
            if (etag !== undefined) {
                headers["If-Match"] = etag;
            } else if (op.kind === "put" && layouts[index]!.kind !== "singleton") {
                // Created here: it must not overwrite an item someone else created with the same id.
                headers["If-None-Match"] = "*";
            }
            const request: SubRequest = { id: `${index}`, method: op.kind.toUpperCase(), url: "/api/v1" + operationPath(op, layouts[index]!) };
            if (op.body !== undefined) request.body = op.body;
            if (Object.keys(headers).length > 0) request.headers = headers;
            return request;
        });
        const answers = await this.group(requests);
        for (const index of writes) {
            const op = batch[index]!;
            const layout = layouts[index]!;
            const answer = answers.get(`${index}`);
            if (!answer) continue;
            const status = answer.status;
            if (status === 200 || status === 201 || status === 204) {
                const server = op.kind === "delete" || !isObject(answer.body) ? undefined : answer.body;
                await this.db.transaction((tx) => replica.landed(tx, model, op, layout, server, header(answer, "ETag")));
                report.pushed += 1;
            } else if (status === 412 || (status === 404 && !(op.kind === "put" && bases[index]!.server === undefined))) {
                // Changed or gone since: see what the server holds (a retried write whose first attempt landed looks
                // like this too, and is no conflict). A 404 on a new child is a parent that is gone: refused below.
                const current = await this.call("GET", operationPath(op, layout));
                const error = current.error();
                if (error?.isTransient) throw error;
                const json = current.json();
                const server = current.status === 200 && isObject(json) ? json : undefined;
                if (alreadyThere(op, server, serverSetFields(layout))) {
                    await this.db.transaction((tx) => replica.landed(tx, model, op, layout, server, current.header("ETag")));
                    report.pushed += 1;
                } else {
                    await this.settle(op, layout, model, bases[index]!.server, server, current.header("ETag") ?? undefined);
                    report.conflicts += 1;
                }
            } else {
                const error = subError(answer);
                if (error.isTransient) throw error;
                // Refused for good (validation, a parent that is gone, a role too low): inspectable, and the queue goes on.
                await this.refuse(op, status, error.code ?? `http_${status}`, error.detail, report);
            }
        }
    }

    /** A write the server refused for good: moved to the failed list, logged, counted and told. */
    private async refuse(op: PendingOperation, status: number, code: string, detail: string, report: SyncReport): Promise<void> {
        await this.db.transaction((tx) => replica.refused(tx, op, status, code, detail));
        this.log.write("warning", "push", "write refused: moved to failedOperations", {
            collection: op.collection,
            id: op.id,
            method: op.kind,
            status,
            code,
        });
        report.failed += 1;
        this.emit("refused", { collection: op.collection, parent: op.parent, id: op.id, kind: op.kind, body: op.body, status, code, detail });
    }

    /**
     * A conflict, settled field by field: fields only one side changed keep that side's value without asking; the
     * collection's handler decides only when both changed a field (within `conflictHandlerTimeoutMs`), else the
     * server's values of those fields are kept. A delete or a create on either side goes to the handler whole (the
     * server wins by default). Every outcome is journaled.
     */
    private async settle(
        op: PendingOperation,
        layout: ModelCollection,
        model: ServerModel,
        base: JsonObject | undefined,
        server: JsonObject | undefined,
        etag: string | undefined
    ): Promise<void> {
        const handler = this.conflictHandlers.get(op.collection);
        const local = localVersion(op, base);
        const versions: ConflictVersions = { collection: op.collection, parent: op.parent, id: op.id, base, local, server };
        let resolution: ConflictResolution;
        let outcome: ConflictOutcome;
        let fields: string[] = [];
        if (base && local && server) {
            const merge = fieldMerge(base, local, server, serverSetFields(layout));
            fields = merge.conflicting;
            const decided = merge.conflicting.length > 0 && handler ? await this.decide(handler, versions) : undefined;
            if (merge.conflicting.length === 0) {
                resolution = merge.localChanged.size === 0 ? "keepServer" : { merged: merge.merged };
                outcome = "merged";
            } else if (decided !== undefined) {
                resolution = decided;
                outcome = outcomeOf(decided);
            } else {
                resolution = { merged: merge.merged };
                outcome = "serverKeptFields";
            }
        } else {
            resolution = (handler ? await this.decide(handler, versions) : undefined) ?? "keepServer";
            outcome = outcomeOf(resolution);
        }
        const result = resolution === "keepServer" ? server : resolution === "keepLocal" ? local : resolution.merged;
        const parent = op.parent ?? "";
        await this.db.transaction(async (tx) => {
            if (resolution === "keepServer") {
                await replica.landed(tx, model, op, layout, server, etag);
            } else {
                // The server's version becomes the base; the edit stays queued and goes again with its ETag.
                if (server) await replica.storeServer(tx, layout, parent, server, etag);
                else await replica.removeServer(tx, model, layout, parent, op.id);
                if (resolution !== "keepLocal") await replica.saveLocal(tx, layout, op.id, parent, resolution.merged);
            }
            await tx.run(
                `INSERT INTO conflicts (atMs, collection, parent, id, resolution, fields, base, local, server, result)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
                [
                    Date.now(),
                    op.collection,
                    parent,
                    op.id,
                    outcome,
                    fields.join(","),
                    base ? canonicalText(base) : null,
                    local ? canonicalText(local) : null,
                    server ? canonicalText(server) : null,
                    result ? canonicalText(result) : null,
                ]
            );
        });
        this.log.write("info", "push", "conflict settled", { collection: op.collection, id: op.id, resolution: outcome, fields: fields.join(",") });
        const records = await this.db.query("SELECT seq, atMs FROM conflicts ORDER BY seq DESC LIMIT 1");
        this.emit("conflict", {
            seq: Number(records[0]?.seq ?? 0),
            date: new Date(Number(records[0]?.atMs ?? Date.now())),
            collection: op.collection,
            parent: op.parent,
            itemId: op.id,
            resolution: outcome,
            fields,
            base,
            local,
            server,
            result,
        });
    }

    /** The handler's answer, or undefined when it has none within the timeout (or fails). */
    private async decide(handler: ConflictHandler, versions: ConflictVersions): Promise<ConflictResolution | undefined> {
        const limit = this.options.conflictHandlerTimeoutMs ?? 30_000;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), limit);
        });
        try {
            return await Promise.race([Promise.resolve().then(() => handler(versions)), timeout]);
        } catch {
            return undefined;
        } finally {
            clearTimeout(timer);
        }
    }

    // MARK: - Sync

    /**
     * Pushes unsent writes, then sends one `POST /group` with a call per sync endpoint of the model (full lists and
     * deltas from the stored date, paginated lists from their last held item, singletons and bundles), and applies
     * every answer with the new date in one transaction: the date never moves ahead of the data, and a failed answer
     * applies nothing. One at a time: a call made while a sync runs joins it. Network errors, 429 and 5xx are retried
     * with backoff.
     */
    sync(): Promise<SyncReport> {
        if (this.runningSync) return this.runningSync;
        const running = this.work.run(() => this.runSync()).finally(() => {
            this.runningSync = undefined;
        });
        this.runningSync = running;
        return running;
    }

    /** One sync with its status, log and events, retried as the policy says (`options`: verify's, see `syncOnce`). */
    private async runSync(options: { fresh?: ReadonlySet<string>; verify?: VerifyCall } = {}): Promise<SyncReport> {
        const started = Date.now();
        this.statusCenter.update({ state: "syncing" });
        try {
            const report = await this.retry.run(() => this.syncOnce(options));
            this.statusCenter.update({ state: "idle", lastSuccessfulSync: new Date(), lastError: undefined });
            this.log.write("info", "sync", "sync finished", {
                date: report.date ?? "",
                pushed: report.pushed,
                failed: report.failed,
                conflicts: report.conflicts,
                replaced: report.replaced.join(","),
                ms: Date.now() - started,
            });
            this.emit("synced", report);
            return report;
        } catch (error) {
            const wrapped = await this.spaceCalls.removal(SyncClientError.wrapping(error), () => this.eraseReplica());
            this.log.write(wrapped.isTransient ? "notice" : "warning", "sync", "sync failed", { code: wrapped.code ?? wrapped.kind });
            this.statusCenter.update({ state: wrapped.isTransient ? "offline" : "error", lastError: wrapped });
            throw wrapped;
        }
    }

    /**
     * Proves the replica exact (protocol §11): a sync with `GET /verify` in the same group (one snapshot, one date),
     * each list's count and digest compared with the replica's; a list that differs is downloaded again whole in a
     * second sync (unsent edits kept on top) and named in `repaired`.
     */
    async verify(): Promise<VerifyReport> {
        const endpoints = (await this.serverModel()).endpoints;
        // Each of its syncs as `sync()` runs one (status, log, a removed space), as the Swift SDK's `runSync(verifying:)`.
        return this.work.run(() => verifyAndRepair(this.db, endpoints, (options) => this.runSync(options)));
    }

    /** One sync: `fresh` collections asked without a date (downloaded again whole); `verify` added to the group. */
    private async syncOnce(options: { fresh?: ReadonlySet<string>; verify?: VerifyCall } = {}): Promise<SyncReport> {
        if (!this.session) throw SyncClientError.notSignedIn();
        const report = await this.pushQueue();
        const model = await this.serverModel();
        const endpoints = model.endpoints;
        let limits = await this.limits();
        let refreshed = false;
        let answer: HttpAnswer | StreamedAnswer;
        for (;;) {
            const pageSize = Math.max(1, Math.min(this.options.pageSize ?? 50, limits.nbMax));
            const children = Math.max(0, Math.min(this.options.maxChildren ?? 10, limits.maxChildren));
            const requests = await syncRequests(this.db, endpoints, pageSize, children, options.fresh);
            if (options.verify) requests.push({ id: "verify", method: "GET", url: options.verify.url });
            if (requests.length > limits.groupMaxRequests && !refreshed) {
                refreshed = true;
                limits = await this.limits(true);
                continue;
            }
            if (requests.length > limits.groupMaxRequests) {
                throw SyncClientError.invalid(`the server takes ${limits.groupMaxRequests} calls per group; a sync needs ${requests.length}`);
            }
            answer = await this.callStreamed("POST", "/group", { requests: requests as unknown as JsonValue });
            if (!(answer instanceof HttpAnswer)) break;
            const error = answer.error();
            if (error?.refusesGroupSize && !refreshed) {
                refreshed = true;
                limits = await this.limits(true);
                continue;
            }
            if (error) throw error;
            if (answer.status !== 200) throw SyncClientError.from(answer.status, answer.json(), null);
            break;
        }
        if (!(answer instanceof HttpAnswer)) return this.applyStreamed(answer, model, report, options);
        const responses = parseGroup(answer.json());
        // Every answer is checked before anything is applied: a failed call applies nothing.
        for (const endpoint of endpoints) {
            const response = responses.get(endpoint.name);
            if (!response) throw SyncClientError.invalidAnswer(`the group carried no answer ${endpoint.name}`);
            if (response.status === 401) {
                await this.sessionEnded();
                throw SyncClientError.notSignedIn();
            }
            if (response.status !== 200 || response.body === undefined || response.body === null) throw subError(response);
        }
        const applied = await this.db.transaction(async (tx) => {
            await replica.beginBulkStamps(tx);
            const dates: string[] = [];
            const replaced: string[] = [];
            for (const endpoint of endpoints) {
                const body = responses.get(endpoint.name)!.body;
                const { date, lists } = await applyEndpoint(tx, model, endpoint, body);
                dates.push(date);
                replaced.push(...lists);
            }
            const date = dates[0];
            if (date === undefined || dates.some((other) => other !== date)) throw SyncClientError.invalidAnswer("the group's answers carry different dates");
            await recordSynced(tx, endpoints, date);
            await replica.endBulkStamps(tx);
            return { date, replaced };
        });
        report.date = applied.date;
        report.replaced = applied.replaced;
        const verified = responses.get("verify");
        if (options.verify && verified) Object.assign(options.verify, { status: verified.status, body: verified.body });
        return report;
    }

    /**
     * A big sync answer applied as it is read (`streamAnswersOverBytes`), in one transaction with its date: each list
     * answer's items stored as they come, the other answers read whole and applied once every answer is read and
     * checked (as `syncOnce` does for an answer read whole). A failed call, a malformed or cut answer, or a date that
     * differs throws inside the transaction, which undoes everything: the replica stays as it was.
     */
    private async applyStreamed(
        answer: StreamedAnswer,
        model: ServerModel,
        report: SyncReport,
        options: { verify?: VerifyCall }
    ): Promise<SyncReport> {
        const endpoints = model.endpoints;
        const head = [...answer.head];
        const reader = new JsonStreamReader(async () => head.shift() ?? answer.body.next(), notAGroup);
        const sessionGone = new Error("session ended");
        let result: { date: string; replaced: string[]; responses: Map<string, SubResponse> };
        try {
            result = await this.db.transaction(async (tx) => {
                await replica.beginBulkStamps(tx);
                const { responses, applied } = await readGroupStream(tx, model, endpoints, reader);
                for (const endpoint of endpoints) {
                    const response = responses.get(endpoint.name);
                    if (!response) throw SyncClientError.invalidAnswer(`the group carried no answer ${endpoint.name}`);
                    if (response.status === 401) throw sessionGone;
                    if (applied.has(endpoint.name)) continue;
                    if (response.status !== 200 || response.body === undefined || response.body === null) throw subError(response);
                }
                const dates: string[] = [];
                const replaced: string[] = [];
                for (const endpoint of endpoints) {
                    const { date, lists } = applied.get(endpoint.name) ?? (await applyEndpoint(tx, model, endpoint, responses.get(endpoint.name)!.body));
                    dates.push(date);
                    replaced.push(...lists);
                }
                const date = dates[0];
                if (date === undefined || dates.some((other) => other !== date)) throw SyncClientError.invalidAnswer("the group's answers carry different dates");
                await recordSynced(tx, endpoints, date);
                await replica.endBulkStamps(tx);
                return { date, replaced, responses };
            });
        } catch (error) {
            if (error === sessionGone) {
                await this.sessionEnded();
                throw SyncClientError.notSignedIn();
            }
            throw error;
        } finally {
            await answer.body.cancel();
        }
        report.date = result.date;
        report.replaced = result.replaced;
        const verified = result.responses.get("verify");
        if (options.verify && verified) Object.assign(options.verify, { status: verified.status, body: verified.body });
        return report;
    }

    /**
     * Loads the next page of a paginated list (`GET /threads`) or of a parent's children (`GET /threads/{id}/messages`),
     * below what the replica holds, and answers whether the list is now complete (`nomore`). Resumable: the place
     * comes from the replica. A page fetched while a sync replaced the list (a crop) is dropped rather than appended
     * below a list it no longer continues (no hole).
     */
    async loadMore(list: string, options: { parent?: string } = {}): Promise<boolean> {
        const limits = await this.limits();
        const pageSize = Math.max(1, Math.min(this.options.pageSize ?? 50, limits.nbMax));
        const children = Math.max(0, Math.min(this.options.maxChildren ?? 10, limits.maxChildren));
        const model = await this.serverModel();
        const layout = model.require(list);
        const parent = options.parent;
        let path: string;
        if (layout.kind === "paginated") {
            path = `/${list}?nb=${pageSize}`;
            if (layout.children) path += `&max${layout.children}=${children}`;
        } else if (layout.kind === "child") {
            if (parent === undefined || !layout.parent) throw SyncClientError.invalid(`${list} needs a parent's id (parent)`);
            path = `/${layout.parent}/${encodeURIComponent(parent)}/${list}?nb=${pageSize}`;
        } else {
            throw SyncClientError.invalid(`${list} is not paginated: a sync brings it whole`);
        }
        const last = await replica.lastServerId(this.db, list, parent ?? "");
        const answer = await this.retry.run(async () => {
            const got = await this.call("GET", path + (last === undefined ? "" : `&lastId=${queryEscape(last)}`));
            const error = got.error();
            if (error) throw error;
            return got;
        });
        const page = replica.parsePageAnswer(answer.json(), list);
        const applied = await this.db.transaction(async (tx) => {
            if ((await replica.lastServerId(tx, list, parent ?? "")) !== last) return false;
            await replica.applyPage(tx, model, layout, parent, page);
            return true;
        });
        return applied ? page.nomore : this.hasAll(list, options);
    }

    // MARK: - Live mode, status, observation (src/live.ts, src/status.ts, src/observe.ts)

    /**
     * Keeps `GET /changes` open and syncs on each notice (debounced; a running sync is joined), reconnecting with
     * backoff (at least 1 s apart) and resuming with `Last-Event-ID`; unsent writes leave as it starts. Asked while
     * signed out, it starts at the next sign-in. The fetch must stream bodies (React Native: a streaming fetch).
     */
    startLive(): void {
        this.liveMode.start();
    }

    /** Stops live mode and closes its connection. */
    stopLive(): Promise<void> {
        return this.liveMode.stop();
    }

    /** What the app shows about syncing, now. */
    get status(): SyncStatus {
        return this.statusCenter.current;
    }

    /** Calls `listener` with the status now, then at each change; answers the function that stops it. */
    onStatus(listener: (status: SyncStatus) => void): () => void {
        return this.statusCenter.listen(listener);
    }

    /**
     * Calls `listener` with the visible items of `collection` (of `parent` for children) now, then after each sync or
     * local write that changed them, and only then (never twice the same items in a row); answers the function that
     * stops it.
     */
    observeItems(collection: string, listener: (items: JsonObject[]) => void, options: { parent?: string; onError?: (error: unknown) => void } = {}): () => void {
        const sorted = (): boolean | undefined => {
            const layout = this.model?.collections.get(collection);
            return this.model ? layout !== undefined && sortField(layout) !== undefined : undefined;
        };
        return this.observers.observe(collection, options.parent, sorted, listener, options.onError);
    }

    /** The status's counts of writes and uploads waiting and refused, read again after each write. */
    private async refreshCounts(): Promise<void> {
        if (this.closed) return;
        const rows = await this.db.query(
            `SELECT (SELECT COUNT(*) FROM queue) + (SELECT COUNT(*) FROM uploads WHERE status IS NULL) AS pending,
(SELECT COUNT(*) FROM failed) + (SELECT COUNT(*) FROM uploads WHERE status IS NOT NULL) AS failed`
        );
        this.statusCenter.update({ pendingWrites: Number(rows[0]?.pending ?? 0), failedWrites: Number(rows[0]?.failed ?? 0) });
    }

    // MARK: - Spaces (src/spaces.ts)

    /** The space this replica holds (undefined: the account's home space). */
    get space(): string | undefined {
        return this.options.space;
    }

    /** The account's spaces, in the order it joined them. */
    spaces(): Promise<SpaceInfo[]> {
        return this.spaceCalls.list();
    }

    /** A new space the account owns (the home space of an account that had none). */
    createSpace(name: string): Promise<SpaceInfo> {
        return this.spaceCalls.create(name);
    }

    /** Joins the space of an invitation code (a member already in it keeps its role); a bad code is 404 `not_found`. */
    acceptInvitation(code: string): Promise<SpaceInfo> {
        return this.spaceCalls.accept(code);
    }

    /** An invitation to this client's space (owners): `role` for who accepts it, `uses` accounts at most, valid `expiresIn` s (default 7 days). */
    invite(args: { role: string; uses?: number; expiresIn?: number }): Promise<SpaceInvitation> {
        return this.spaceCalls.invite(args.role, args.uses, args.expiresIn);
    }

    /** The members of this client's space. */
    members(): Promise<SpaceMember[]> {
        return this.spaceCalls.members();
    }

    /** Gives a member of this client's space another role (owners; demoting the last owner is 409 `last_owner`). */
    setMemberRole(accountId: string, role: string): Promise<void> {
        return this.spaceCalls.setRole(accountId, role);
    }

    /** Removes a member from this client's space (owners), or leaves it (the account's own id). */
    removeMember(accountId: string): Promise<void> {
        return this.spaceCalls.remove(accountId);
    }

    /** Renames this client's space (owners). */
    renameSpace(name: string): Promise<void> {
        return this.spaceCalls.rename(name);
    }

    /**
     * A client of another space of the signed-in account, with its own replica (`storage`) and media store; the session
     * is shared through the token store. Switching spaces is using the other client.
     */
    forSpace(space: string, options: Partial<SyncClientOptions> & { storage: StorageDriver }): Promise<SyncClient> {
        return SyncClient.open({ ...this.options, mediaStore: new MemoryMediaStore(), ...options, tokenStore: this.tokenStore, space });
    }

    /**
     * Follows every space of the account with one stream (`GET /changes?spaces=all`) until `stop`: the listing at each
     * connection and each change of membership, then each space's dates. `SpaceSet` is what an app uses.
     */
    spaceEvents(listener: (event: SpaceEvent) => void): { stop(): Promise<void>; ended: Promise<EventStreamEnd> } {
        return this.spaceCalls.follow(this.liveTiming, listener);
    }

    /** Empties the replica (its items, queue, journal and media; the session stays): the next sync downloads everything. */
    reset(): Promise<void> {
        return this.work.run(() => this.eraseReplica());
    }

    private async eraseReplica(): Promise<void> {
        const account = await replica.getMeta(this.db, MetaKey.account);
        await this.db.transaction(async (tx) => {
            await replica.eraseData(tx, false);
            if (account !== undefined) await replica.setMeta(tx, MetaKey.account, account);
        });
        await this.mediaQueue.erase();
    }

    /** An account in no space that creates or joins one: that space becomes its home (the server's rule: the first joined). */
    private async adoptHomeIfNone(space: string): Promise<void> {
        if (!this.session || this.session.familyID !== "") return;
        const updated = { ...this.session, familyID: space };
        await this.tokenStore.save(updated);
        this.session = updated;
    }

    // MARK: - Media (src/media.ts)

    /**
     * Queues the upload of a photo or video (protocol §10) and answers its URL at once, offline too: the SHA-256 of the
     * bytes (`/api/v1/media/<sha256>`), so an item can name it right away. Uploads leave before any item write, with the
     * pushes; they survive restarts when the `mediaStore` does.
     */
    upload(bytes: Uint8Array, contentType: string): Promise<string> {
        return this.mediaQueue.upload(bytes, contentType);
    }

    /** The bytes of a medium of this server: from the cache when there (never revalidated), else downloaded, checked and kept. */
    media(url: string): Promise<Uint8Array> {
        return this.mediaQueue.media(url);
    }

    /** The uploads the server refused for good (a type it does not take, too large, a reader's role). */
    failedUploads(): Promise<FailedUpload[]> {
        return this.mediaQueue.failed();
    }
}

function readLimits(object: JsonObject): ServerLimits | undefined {
    const { groupMaxRequests, nbMax, maxChildren, bodyMaxBytes } = object;
    if (typeof groupMaxRequests !== "number" || typeof nbMax !== "number" || typeof maxChildren !== "number" || typeof bodyMaxBytes !== "number") {
        return undefined;
    }
    return { bodyMaxBytes, groupMaxRequests, maxChildren, nbMax };
}

function outcomeOf(resolution: ConflictResolution): ConflictOutcome {
    return resolution === "keepServer" ? "keptServer" : resolution === "keepLocal" ? "keptLocal" : "handlerMerged";
}

function defaultOnlineEvents(): OnlineEvents | undefined {
    const global = globalThis as unknown as Partial<OnlineEvents>;
    return typeof global.addEventListener === "function" && typeof global.removeEventListener === "function" ? (global as OnlineEvents) : undefined;
}
