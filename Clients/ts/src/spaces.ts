import type { SyncClient, SyncReport } from "./client.js";
import { ClientCore } from "./core.js";
import { SyncClientError } from "./errors.js";
import { HttpAnswer, pathEscape } from "./http.js";
import { isObject, JsonObject, JsonValue } from "./json.js";
import { EventStreamEnd, followEventStream, LiveTiming } from "./live.js";

/** A space of the account (protocol §15), as `GET /spaces` lists it: what a space picker shows. */
export interface SpaceInfo {
    id: string;
    name: string;
    /** `owner`, `member` or `reader`. */
    role: string;
    /** Whether the unprefixed paths (a client with no `space`) address it. */
    home?: boolean;
}

/** A member of a space, for a members screen (`GET /spaces/{id}/members`). */
export interface SpaceMember {
    accountId: string;
    displayName: string;
    role: string;
}

/** A new invitation: its code is shown once (the server keeps only its hash), to be passed on to the invitee. */
export interface SpaceInvitation {
    code: string;
    role: string;
    expiresAt: string;
    uses: number;
}

/** A space and the account's role there, as the all-spaces stream lists it: how an app learns it joined or lost one. */
export interface SpaceRole {
    id: string;
    role: string;
}

/**
 * One notice of `GET /changes?spaces=all` (protocol §15). It exists so that an app in many spaces keeps one connection
 * instead of one per space: `spaces` lists the account's spaces (at each connection, then at each change of
 * membership or role); `changed` gives a space's current date (one per space after the listing, then at each move).
 */
export type SpaceEvent = { kind: "spaces"; spaces: SpaceRole[] } | { kind: "changed"; space: string; date: string };

function text(object: JsonObject, key: string): string {
    const value = object[key];
    return typeof value === "string" ? value : "";
}

/** A space of an answer, checked (`GET /spaces`, `POST /spaces`, `POST /invitations/accept`). */
export function spaceInfo(value: JsonValue | undefined): SpaceInfo {
    if (!isObject(value)) throw SyncClientError.invalidAnswer("a space is not an object");
    const info: SpaceInfo = { id: text(value, "id"), name: text(value, "name"), role: text(value, "role") };
    if (typeof value.home === "boolean") info.home = value.home;
    return info;
}

function expect(answer: HttpAnswer, status: number): JsonValue | undefined {
    if (answer.status !== status) throw answer.error() ?? SyncClientError.from(answer.status, answer.json(), null);
    return answer.json();
}

function list<T>(json: JsonValue | undefined, read: (value: JsonValue) => T): T[] {
    if (!Array.isArray(json)) throw SyncClientError.invalidAnswer("the answer is not a list");
    return json.map(read);
}

/** The calls of protocol §15 for one client: what `SyncClient`'s space methods run, kept out of `client.ts` so that each concept has its file. */
export class Spaces {
    constructor(
        private readonly core: ClientCore,
        /** An account in no space that creates or joins one: that space becomes its home. */
        private readonly adoptHome: (space: string) => Promise<void>
    ) {}

    /** `/spaces/{id}` + `path` for this client's space (its home space's id when the client has no `space`). */
    path(path: string): string {
        const space = this.core.space ?? this.core.session()?.familyID;
        if (space === undefined || space === "") throw SyncClientError.notSignedIn();
        return `/spaces/${pathEscape(space)}${path}`;
    }

    async list(): Promise<SpaceInfo[]> {
        return list(expect(await this.core.call("GET", "/spaces"), 200), spaceInfo);
    }

    async create(name: string): Promise<SpaceInfo> {
        const space = spaceInfo(expect(await this.core.call("POST", "/spaces", { name }), 201));
        await this.adoptHome(space.id);
        return space;
    }

    async accept(code: string): Promise<SpaceInfo> {
        const space = spaceInfo(expect(await this.core.call("POST", "/invitations/accept", { code }), 200));
        await this.adoptHome(space.id);
        return space;
    }

    async invite(role: string, uses?: number, expiresIn?: number): Promise<SpaceInvitation> {
        const body: JsonObject = { role };
        if (uses !== undefined) body.uses = uses;
        if (expiresIn !== undefined) body.expiresIn = expiresIn;
        const json = expect(await this.core.call("POST", this.path("/invitations"), body), 201);
        if (!isObject(json) || typeof json.code !== "string") throw SyncClientError.invalidAnswer("an invitation without a code");
        return { code: json.code, role: text(json, "role"), expiresAt: text(json, "expiresAt"), uses: Number(json.uses ?? 1) };
    }

    async members(): Promise<SpaceMember[]> {
        return list(expect(await this.core.call("GET", this.path("/members")), 200), (value) => {
            const object = isObject(value) ? value : {};
            return { accountId: text(object, "accountId"), displayName: text(object, "displayName"), role: text(object, "role") };
        });
    }

    async setRole(accountId: string, role: string): Promise<void> {
        expect(await this.core.call("PUT", this.path(`/memberships/${pathEscape(accountId)}`), { role }), 200);
    }

    async remove(accountId: string): Promise<void> {
        expect(await this.core.call("DELETE", this.path(`/memberships/${pathEscape(accountId)}`)), 204);
    }

    async rename(name: string): Promise<void> {
        expect(await this.core.call("PUT", this.path(""), { name }), 200);
    }

    /**
     * A sync of a space-bound client failed with 404: when the account no longer lists the space (removed, or the
     * space is gone), `erase` empties the replica and the error becomes `spaceRemoved`; any other error as it is.
     */
    async removal(error: SyncClientError, erase: () => Promise<void>): Promise<SyncClientError> {
        const space = this.core.space;
        if (space === undefined || error.kind !== "server" || error.status !== 404) return error;
        const listed = await this.list().catch(() => undefined);
        if (!listed || listed.some((info) => info.id === space)) return error;
        await erase();
        this.core.log.write("notice", "session", "no longer a member of the space: its replica was erased", { space });
        // As the Swift SDK's `.spaceRemoved(space)`: no status and no code (the conformance suite compares them).
        return new SyncClientError("spaceRemoved", `no longer a member of space ${space}: its local data was erased`);
    }

    /**
     * Follows every space of the account with one stream, `GET /changes?spaces=all` (unprefixed, whichever space this
     * client holds), until `stop`. A network failure or a 5xx is retried as live mode's; a 401 ends it (signed out); a
     * refusal ends it with the error.
     */
    follow(timing: LiveTiming, listener: (event: SpaceEvent) => void): { stop(): Promise<void>; ended: Promise<EventStreamEnd> } {
        const controller = new AbortController();
        const ended = followEventStream(this.core, timing, controller.signal, {
            refusalEnds: true,
            request: async () => ({ path: "/changes?spaces=all", headers: {}, prefixed: false }),
            handle: async (events) => {
                for (const event of events) {
                    const notice = spaceEvent(event.event, event.data);
                    if (notice) listener(notice);
                }
            },
        });
        return {
            ended,
            async stop() {
                controller.abort();
                await ended;
            },
        };
    }
}

/** A server event of the all-spaces stream; undefined for another event or one that does not decode. */
export function spaceEvent(event: string, data: string): SpaceEvent | undefined {
    let json: unknown;
    try {
        json = JSON.parse(data);
    } catch {
        return undefined;
    }
    if (!isObject(json)) return undefined;
    if (event === "spaces" && Array.isArray(json.spaces)) {
        return { kind: "spaces", spaces: json.spaces.filter(isObject).map((space) => ({ id: text(space, "id"), role: text(space, "role") })) };
    }
    if (event === "change" && typeof json.space === "string" && typeof json.date === "string") {
        return { kind: "changed", space: json.space, date: json.date };
    }
    return undefined;
}

/** What `SpaceSet.follow` did, for the app to show (a space joined or lost) or to remember (`heldSpaces` at the next launch). */
export type SpaceUpdate =
    | { kind: "spaces"; spaces: SpaceRole[] }
    | { kind: "synced"; space: string; report: SyncReport }
    | { kind: "syncFailed"; space: string; error: SyncClientError }
    | { kind: "removed"; space: string; client: SyncClient };

/**
 * The replicas of every space of an account, kept current with one connection (`GET /changes?spaces=all`). It exists
 * because an account in several spaces holds one replica per space (a `SyncClient` each), and one stream per space
 * would not say that the account lost one. `follow` syncs a space's replica when the server says it moved, opens a
 * replica (with `open`) for a space the account joins, and erases the replica of a space no longer listed, telling
 * the app (which closes that client's storage).
 */
export class SpaceSet {
    private readonly held = new Map<string, SyncClient>();
    private readonly inbox = new Map<string, { date: string; running: boolean }>();
    /** The catch-ups that run (waited for by `stop`, so that the app may close the clients after it). */
    private readonly tasks = new Set<Promise<void>>();

    /** `open` makes the client of a space (`account.forSpace(space, { storage })`, its own replica file). */
    constructor(
        readonly account: SyncClient,
        private readonly open: (space: string) => Promise<SyncClient>
    ) {}

    /** Opens the replicas the app kept from an earlier run, so that one the account lost meanwhile is erased at the first listing. */
    async hold(spaces: string[]): Promise<void> {
        for (const space of spaces) await this.client(space);
    }

    /** The client of a space: the account's for its own space, else the one the set holds (opened at first use). */
    async client(space: string): Promise<SyncClient> {
        const existing = this.existing(space);
        if (existing) return existing;
        const client = await this.open(space);
        this.held.set(space, client);
        return client;
    }

    /** The spaces the set holds a replica of, the account's own aside: what to pass to `hold` at the next launch. */
    get heldSpaces(): string[] {
        return [...this.held.keys()].sort();
    }

    /** Follows the account's spaces until `stop`, which also waits for the syncs it started (one per space at a time, to the newest date told). */
    follow(onUpdate: (update: SpaceUpdate) => void): { stop(): Promise<void>; ended: Promise<EventStreamEnd> } {
        const tell = (update: SpaceUpdate): void => {
            try {
                onUpdate(update);
            } catch {
                // The app's handler never stops the set.
            }
        };
        let chain = Promise.resolve();
        const events = this.account.spaceEvents((event) => {
            // In order: a listing's removals and openings before the dates that follow it.
            chain = chain.then(() => this.take(event, tell)).catch(() => undefined);
        });
        return {
            ended: events.ended,
            stop: async () => {
                await events.stop();
                await chain;
                while (this.tasks.size > 0) await Promise.all([...this.tasks]);
            },
        };
    }

    private async take(event: SpaceEvent, tell: (update: SpaceUpdate) => void): Promise<void> {
        if (event.kind === "changed") {
            this.catchUp(event.space, event.date, tell);
            return;
        }
        tell(event);
        const listed = new Set(event.spaces.map((space) => space.id));
        for (const space of this.heldSpaces) {
            if (listed.has(space)) continue;
            const client = this.held.get(space)!;
            this.held.delete(space);
            this.inbox.delete(space);
            try {
                await client.reset();
                tell({ kind: "removed", space, client });
            } catch (error) {
                this.held.set(space, client);
                tell({ kind: "syncFailed", space, error: SyncClientError.wrapping(error) });
            }
        }
        for (const space of listed) {
            if (this.existing(space)) continue;
            await this.client(space).catch((error: unknown) => tell({ kind: "syncFailed", space, error: SyncClientError.wrapping(error) }));
        }
    }

    /** Syncs a space's replica until it is at the newest date told (a sync the app runs is joined). */
    private catchUp(space: string, date: string, tell: (update: SpaceUpdate) => void): void {
        const slot = this.inbox.get(space) ?? { date, running: false };
        slot.date = date;
        this.inbox.set(space, slot);
        if (slot.running) return;
        slot.running = true;
        const task = (async () => {
            try {
                for (;;) {
                    const target = slot.date;
                    const client = this.existing(space);
                    if (!client) return;
                    if ((await client.syncDate()) !== target) {
                        try {
                            tell({ kind: "synced", space, report: await client.sync() });
                        } catch (error) {
                            const wrapped = SyncClientError.wrapping(error);
                            if (wrapped.kind === "spaceRemoved") {
                                if (this.held.delete(space)) tell({ kind: "removed", space, client });
                                return;
                            }
                            tell({ kind: "syncFailed", space, error: wrapped });
                        }
                    }
                    if (slot.date === target) return;
                }
            } finally {
                slot.running = false;
            }
        })();
        this.tasks.add(task);
        void task.finally(() => this.tasks.delete(task));
    }

    private existing(space: string): SyncClient | undefined {
        const own = this.account.space ?? this.account.currentSession?.familyID;
        return space === own ? this.account : this.held.get(space);
    }
}
