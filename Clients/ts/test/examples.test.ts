// The README's examples run against a real server: the live, spaces and media blocks of examples/getting-started.ts;
// examples/react-native.ts under Node, its libraries replaced by stand-ins of their documented APIs (op-sqlite's over a
// real SQLite file, the Keychain, AppState, Sign in with Apple, Google Sign-In, React's useState/useEffect); and
// examples/web.ts's token store, Google sign-in and DOM list, with stand-ins for localStorage, `document` and Google's
// script. The server trusts an identity provider of the test's own, whose ID tokens stand for Apple's and Google's.
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { register } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { followContacts, joinSpace, openAppClient, postPhoto } from "../examples/getting-started.js";
import { localTokenStore, showEvents, signInWithGoogle as signInOnPage } from "../examples/web.js";
import { ClientSession, OpSqliteDatabase, SyncClient, SyncStatus } from "../src/index.js";
import { openClient, username } from "./support/clients.js";
import { eventually, raw, rawLogIn, TestServer } from "./support/server.js";
import { opSqliteOpen } from "./storage/standins.js";

const issuer = "https://id.example";
const audience = "com.example.family";
const keys = generateKeyPairSync("rsa", { modulusLength: 2048 });
let server: TestServer;
let files: string;

before(async () => {
    files = mkdtempSync(join(tmpdir(), "syncapi-ts-examples-"));
    const jwks = join(files, "jwks.json");
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...keys.publicKey.export({ format: "jwk" }), kid: "k1", alg: "RS256", use: "sig" }] }));
    const identity = join(files, "identity.json");
    writeFileSync(identity, JSON.stringify({ providers: [{ name: "test", issuer, audiences: [audience], jwks: `file:${jwks}`, algorithms: ["RS256"] }] }));
    server = await TestServer.start(["--identity", identity]);
});

after(async () => {
    await server?.stop();
    rmSync(files, { recursive: true, force: true });
});

/** An ID token of the test's provider for `subject` (what Sign in with Apple or Google would give), valid 10 minutes. */
function idToken(subject: string): string {
    const now = Math.floor(Date.now() / 1000);
    const part = (value: string | Uint8Array): string => Buffer.from(value).toString("base64url");
    const input = `${part(JSON.stringify({ alg: "RS256", kid: "k1", typ: "JWT" }))}.${part(JSON.stringify({ iss: issuer, aud: audience, sub: subject, iat: now, exp: now + 600 }))}`;
    return `${input}.${part(sign("sha256", Buffer.from(input), keys.privateKey))}`;
}

test("the README's live block: another device's contact is shown, and the badge says live", async () => {
    const { client, storage } = await openAppClient(server.url, server.path("live-app.sqlite"));
    try {
        const name = username("ann");
        await client.signUp({ family: "Smith", username: name, password: "password1" });
        let shown: string[] = [];
        let badge: SyncStatus | undefined;
        const stop = followContacts(
            client,
            (names) => (shown = names),
            (status) => (badge = status)
        );
        await eventually("live", () => badge?.liveConnected === true);
        await raw(server, await rawLogIn(server, name), "PUT", "/contacts/c1", { firstName: "Bea" });
        await eventually("Bea shown", () => shown.includes("Bea"));
        stop();
        await eventually("live stopped", () => !client.status.live);
    } finally {
        await client.close();
        await storage.close();
    }
});

test("the README's spaces and media block: a space joined by code has its own replica; a photo posted offline is read back", async () => {
    const owner = await openAppClient(server.url, server.path("owner.sqlite"));
    const guest = await openAppClient(server.url, server.path("guest.sqlite"));
    let club: Awaited<ReturnType<typeof joinSpace>> | undefined;
    try {
        await owner.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
        await guest.client.signUp({ family: "Jones", username: username("bob"), password: "password1" });
        const { code } = await owner.client.invite({ role: "member" });
        club = await joinSpace(guest.client, code, server.path("guest-club.sqlite"));
        assert.equal(club.space, owner.client.currentSession?.familyID);
        const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
        assert.deepEqual(await postPhoto(club, "p1", jpeg), jpeg);
        await club.push();
        await owner.client.sync();
        const post = await owner.client.item("wall", "p1");
        assert.deepEqual(await owner.client.media(String(post?.mediaUrl)), jpeg);
    } finally {
        await club?.close();
        for (const opened of [owner, guest]) {
            await opened.client.close();
            await opened.storage.close();
        }
    }
});

/**
 * One component's hooks, rendered the way React does for what the example uses: `useState` keeps its value between
 * renders and a new value renders again (the same value does not); `useEffect` runs after the render when its
 * dependencies changed, its cleanup first; unmounting runs the cleanups.
 */
class HookHost<T> {
    static current: HookHost<unknown> | undefined;
    private states: unknown[] = [];
    private effects: { dependencies: readonly unknown[] | undefined; cleanup: (() => void) | void }[] = [];
    private cursor = 0;
    private effectCursor = 0;
    private queued: (() => void)[] = [];
    renders = 0;
    value!: T;

    constructor(private readonly hook: () => T) {
        this.render();
    }

    useState<S>(initial: S | (() => S)): [S, (value: S | ((previous: S) => S)) => void] {
        const index = this.cursor++;
        if (!(index in this.states)) this.states[index] = typeof initial === "function" ? (initial as () => S)() : initial;
        const set = (value: S | ((previous: S) => S)): void => {
            const next = typeof value === "function" ? (value as (previous: S) => S)(this.states[index] as S) : value;
            if (Object.is(next, this.states[index])) return;
            this.states[index] = next;
            this.render();
        };
        return [this.states[index] as S, set];
    }

    useEffect(effect: () => void | (() => void), dependencies?: readonly unknown[]): void {
        const index = this.effectCursor++;
        const old = this.effects[index];
        if (old && dependencies && old.dependencies && dependencies.every((value, at) => Object.is(value, old.dependencies![at]))) return;
        this.queued.push(() => {
            old?.cleanup?.();
            this.effects[index] = { dependencies, cleanup: effect() };
        });
    }

    private render(): void {
        const outer = HookHost.current;
        HookHost.current = this as HookHost<unknown>;
        this.cursor = 0;
        this.effectCursor = 0;
        try {
            this.value = this.hook();
            this.renders++;
        } finally {
            HookHost.current = outer;
        }
        const queued = this.queued;
        this.queued = [];
        for (const run of queued) run();
    }

    unmount(): void {
        for (const effect of this.effects) effect?.cleanup?.();
        this.effects = [];
    }
}

/** React Native's AppState: the test says when the app goes to the background and comes back. */
class AppStateStandIn {
    currentState = "active";
    private listeners = new Set<(state: string) => void>();
    addEventListener(_type: "change", listener: (state: string) => void): { remove(): void } {
        this.listeners.add(listener);
        return { remove: () => void this.listeners.delete(listener) };
    }
    change(state: string): void {
        this.currentState = state;
        for (const listener of this.listeners) listener(state);
    }
}

/** The stand-ins the React Native example's imports resolve to (module hooks below), by module and export name. */
const appState = new AppStateStandIn();
const keychain = new Map<string, { username: string; password: string; service: string }>();
const databases: OpSqliteDatabase[] = [];
let appleToken: string | null = null;
const googleAnswers: ({ type: "success"; data: { idToken: string | null } } | { type: "cancelled"; data: null })[] = [];
const standIns: Record<string, Record<string, unknown>> = {
    "react-native": { AppState: appState },
    react: {
        useState: (initial: unknown) => HookHost.current!.useState(initial),
        useEffect: (effect: () => void | (() => void), dependencies?: readonly unknown[]) => HookHost.current!.useEffect(effect, dependencies),
    },
    "@op-engineering/op-sqlite": {
        open(options: { name: string }) {
            const db = opSqliteOpen({ ...options, location: server.folder });
            databases.push(db);
            return db;
        },
    },
    "react-native-keychain": {
        async getGenericPassword(options: { service: string }) {
            return keychain.get(options.service) ?? false;
        },
        async setGenericPassword(name: string, password: string, options: { service: string }) {
            keychain.set(options.service, { username: name, password, service: options.service });
            return { service: options.service };
        },
        async resetGenericPassword(options: { service: string }) {
            return keychain.delete(options.service);
        },
    },
    "@invertase/react-native-apple-authentication": {
        appleAuth: {
            isSupported: true,
            Operation: { IMPLICIT: 0, LOGIN: 1, REFRESH: 2, LOGOUT: 3 },
            Scope: { EMAIL: 0, FULL_NAME: 1 },
            async performRequest(options: { requestedOperation: number; requestedScopes: number[] }) {
                assert.deepEqual(options, { requestedOperation: 1, requestedScopes: [0] });
                return { user: "apple-user", identityToken: appleToken, authorizationCode: null, email: null };
            },
        },
    },
    "@react-native-google-signin/google-signin": {
        GoogleSignin: {
            configure() {},
            async hasPlayServices() {
                return true;
            },
            async signIn() {
                return googleAnswers.shift() ?? { type: "cancelled", data: null };
            },
        },
    },
};

/** Resolves the React Native example's imports to modules that export the stand-ins (Node's module hooks). */
function registerStandIns(): void {
    (globalThis as { syncapiStandIns?: unknown }).syncapiStandIns = standIns;
    const modules = Object.fromEntries(
        Object.entries(standIns).map(([name, exports]) => [
            name,
            Object.keys(exports)
                .map((key) => `export const ${key} = globalThis.syncapiStandIns[${JSON.stringify(name)}][${JSON.stringify(key)}];`)
                .join("\n"),
        ])
    );
    const hooks = `const modules = ${JSON.stringify(modules)};
export async function resolve(specifier, context, next) {
    if (Object.hasOwn(modules, specifier)) return { url: "data:text/javascript," + encodeURIComponent(modules[specifier]), shortCircuit: true };
    return next(specifier, context);
}`;
    register("data:text/javascript," + encodeURIComponent(hooks));
}

test("the README's React Native example: op-sqlite, Apple and Google sign-in, the Keychain, AppState, and hooks that redraw", async () => {
    registerStandIns();
    const rn = await import("../examples/react-native.js");
    const streamingFetch = (input: string, init: RequestInit): Promise<Response> => fetch(input, init); // Node's streams
    const closeAll = async (client: SyncClient): Promise<void> => {
        await client.close();
        for (const db of databases.splice(0)) db.close();
    };

    let client = await rn.openClient(server.url, streamingFetch);
    const contacts = new HookHost(() => rn.useContacts(client));
    const status = new HookHost(() => rn.useSyncStatus(client));
    try {
        assert.equal(client.isSignedIn, false);
        assert.equal(contacts.value.length, 0);
        appleToken = null; // Apple gave no identity token: nothing happens
        assert.equal(await rn.signInWithApple(client), false);
        appleToken = idToken(`apple-${username("ann")}`);
        assert.equal(await rn.signInWithApple(client), true);
        const session = JSON.parse(keychain.get("syncapi.session")!.password) as ClientSession;
        assert.deepEqual(session, client.currentSession);
        assert.equal((await client.singleton("family"))?.name, "Home");
        // Live mode, asked at open, started at sign-in; the badge's hook hears it.
        await eventually("live", () => status.value.liveConnected);

        // Another device writes: the list's hook renders the contacts again, sorted by last then first name.
        const token = session.token;
        await raw(server, token, "PUT", "/contacts/c1", { firstName: "Bea", lastName: "Brown" });
        await raw(server, token, "PUT", "/contacts/c2", { firstName: "Al", lastName: "Adams" });
        await eventually("both shown", () => contacts.value.length === 2);
        assert.deepEqual(contacts.value.map((contact) => contact.firstName), ["Al", "Bea"]);
        // A local write redraws at once; a write to another collection does not.
        const renders = contacts.renders;
        await client.save("events", { id: "e1", title: "Dinner", start: "2026-05-01T19:00:00Z" });
        await client.save("contacts", { id: "c3", firstName: "Cy", lastName: "Brown" });
        await eventually("Cy shown", () => contacts.value.some((contact) => contact.id === "c3"));
        assert.equal(contacts.renders, renders + 1);

        // In the background live mode closes; back in the foreground it reopens, and what was written meanwhile arrives.
        appState.change("background");
        await eventually("live closed", () => !status.value.liveConnected);
        await raw(server, token, "PUT", "/contacts/c4", { firstName: "Di", lastName: "Dunn" });
        appState.change("active");
        await eventually("live again", () => status.value.liveConnected);
        await eventually("Di shown", () => contacts.value.some((contact) => contact.firstName === "Di"));
        contacts.unmount();
        status.unmount();

        // The next launch: still signed in (the Keychain), the replica there before any network.
        await closeAll(client);
        client = await rn.openClient(server.url, streamingFetch);
        assert.equal(client.isSignedIn, true);
        assert.deepEqual((await client.items("contacts")).map((contact) => contact.id).sort(), ["c1", "c2", "c3", "c4"]);

        // Google: cancelled, then signed in again after a logout (the same identity: the same account).
        await client.logOut();
        assert.equal(keychain.has("syncapi.session"), false);
        googleAnswers.push({ type: "cancelled", data: null });
        assert.equal(await rn.signInWithGoogle(client), false);
        googleAnswers.push({ type: "success", data: { idToken: appleToken } });
        assert.equal(await rn.signInWithGoogle(client), true);
        assert.equal(client.currentSession?.accountID, session.accountID);
        assert.equal((await client.items("contacts")).length, 4);
    } finally {
        contacts.unmount();
        status.unmount();
        await closeAll(client);
    }
});

test("the README's web example: the session in localStorage, Google's button signs in, the events list is drawn into the DOM", async () => {
    const stored = new Map<string, string>();
    const page = globalThis as { localStorage?: unknown; document?: unknown; google?: unknown };
    page.localStorage = {
        getItem: (key: string) => stored.get(key) ?? null,
        setItem: (key: string, value: string) => void stored.set(key, value),
        removeItem: (key: string) => void stored.delete(key),
    };
    page.document = { createElement: (tagName: string) => ({ tagName, textContent: "" }) };
    let callback: ((response: { credential: string }) => void) | undefined;
    let rendered: unknown;
    page.google = {
        accounts: {
            id: {
                initialize(config: { client_id: string; callback: (response: { credential: string }) => void }) {
                    assert.equal(config.client_id, "web-client-id");
                    callback = config.callback;
                },
                renderButton(parent: unknown) {
                    rendered = parent;
                },
            },
        },
    };
    const list = {
        items: [] as { tagName: string; textContent: string }[],
        replaceChildren(...items: { tagName: string; textContent: string }[]) {
            this.items = items;
        },
    };
    const text = (): string[] => list.items.map((item) => `${item.tagName} ${item.textContent}`);

    const opened = await openClient(server, { tokenStore: localTokenStore });
    try {
        const button = {} as HTMLElement;
        const signedIn = signInOnPage(opened.client, "web-client-id", button);
        assert.equal(rendered, button);
        callback!({ credential: idToken(`google-${username("ann")}`) });
        await signedIn;
        assert.deepEqual(JSON.parse(stored.get("syncapi.session")!), opened.client.currentSession);

        const stop = showEvents(opened.client, list as unknown as HTMLUListElement, "2026-05-01T00:00:00Z");
        await opened.client.save("events", { id: "e2", title: "Picnic", start: "2026-06-01T12:00:00Z" });
        await opened.client.save("events", { id: "e1", title: "Dinner", start: "2026-05-01T19:00:00Z" });
        await opened.client.save("events", { id: "e0", title: "Past", start: "2026-04-01T19:00:00Z" });
        await eventually("two events drawn", () => list.items.length === 2);
        assert.deepEqual(text(), ["li 2026-05-01 Dinner", "li 2026-06-01 Picnic"]);
        // Another device's event arrives with a sync and is drawn in its place.
        await raw(server, opened.client.currentSession!.token, "PUT", "/events/e3", { title: "Trip", start: "2026-05-15T08:00:00Z" });
        await opened.client.sync();
        await eventually("three events drawn", () => list.items.length === 3);
        assert.deepEqual(text(), ["li 2026-05-01 Dinner", "li 2026-05-15 Trip", "li 2026-06-01 Picnic"]);
        stop();

        // The next load of the page is signed in; logging out clears the stored session.
        assert.deepEqual(await localTokenStore.load(), opened.client.currentSession);
        await opened.client.logOut();
        assert.equal(stored.has("syncapi.session"), false);
    } finally {
        await opened.close();
        delete page.localStorage;
        delete page.document;
        delete page.google;
    }
});
