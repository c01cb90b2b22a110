// Accounts against the real server: signup, login, ID-token sign-in (a provider of the test's own, its key set in a
// file), logout; the token kept by the client; typed errors with the server's codes.
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { SyncClientError } from "../src/index.js";
import { FileTokenStore } from "../src/node.js";
import { openClient, username } from "./support/clients.js";
import { next, raw, TestServer } from "./support/server.js";

const issuer = "https://id.example";
const audience = "com.example.app";
const keys = generateKeyPairSync("rsa", { modulusLength: 2048 });
let server: TestServer;

let files: string;

before(async () => {
    // The provider's key set and the server's identity file, then a server that trusts the provider.
    files = mkdtempSync(join(tmpdir(), "syncapi-ts-idp-"));
    const jwks = join(files, "jwks.json");
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...keys.publicKey.export({ format: "jwk" }), kid: "k1", alg: "RS256", use: "sig" }] }));
    const identity = join(files, "identity.json");
    writeFileSync(
        identity,
        JSON.stringify({ providers: [{ name: "test", issuer, audiences: [audience], jwks: `file:${jwks}`, algorithms: ["RS256"], displayName: "name" }] })
    );
    server = await TestServer.start(["--identity", identity]);
});

after(async () => {
    await server?.stop();
    rmSync(files, { recursive: true, force: true });
});

function base64url(value: string | Uint8Array): string {
    return Buffer.from(value).toString("base64url");
}

/** An ID token of the test's provider for `subject`, valid for 10 minutes from `now` (seconds). */
function idToken(subject: string, now = Math.floor(Date.now() / 1000)): string {
    const header = base64url(JSON.stringify({ alg: "RS256", kid: "k1", typ: "JWT" }));
    const claims = base64url(JSON.stringify({ iss: issuer, aud: audience, sub: subject, iat: now, exp: now + 600, name: "Ann Example" }));
    const input = `${header}.${claims}`;
    return `${input}.${base64url(sign("sha256", Buffer.from(input), keys.privateKey))}`;
}

test("signup keeps the token (in the Swift SDK's token file); a taken username and a wrong password are typed errors with the server's codes", async () => {
    const ann = await openClient(server);
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        const session = ann.client.currentSession!;
        assert.ok(session.token.length >= 22 && session.accountID && session.familyID);
        assert.deepEqual(await new FileTokenStore(ann.replicaPath + ".token").load(), session);
        assert.equal((await raw(server, session.token, "GET", "/ctcsync")).status, 200);

        const ben = await openClient(server);
        try {
            await assert.rejects(ben.client.signUp({ family: "Other", username: name, password: "password1" }), (error: unknown) => {
                return error instanceof SyncClientError && error.kind === "server" && error.status === 409 && error.code === "username_taken";
            });
            await assert.rejects(ben.client.logIn({ username: name, password: "wrong-password" }), (error: unknown) => {
                return error instanceof SyncClientError && error.kind === "invalidCredentials" && error.code === "invalid_credentials";
            });
            assert.equal(ben.client.isSignedIn, false);
            // The same account on another replica: signed in, its own token.
            await ben.client.logIn({ username: name, password: "password1" });
            assert.equal(ben.client.currentSession?.accountID, session.accountID);
            assert.notEqual(ben.client.currentSession?.token, session.token);
        } finally {
            await ben.close();
        }

        // A client opened again on the same files is still signed in.
        await ann.close();
        const again = await openClient(server, {}, ann.replicaPath.replace(/^.*\//, "").replace(/\.sqlite$/, ""));
        try {
            assert.deepEqual(again.client.currentSession, session);
        } finally {
            await again.close();
        }
    } finally {
        await ann.close();
    }
});

test("logout revokes the token at once and empties the replica; a token revoked elsewhere ends the session on the next call", async () => {
    let offline = false;
    const ann = await openClient(server, {
        fetch: (input, init) => (offline ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init)),
    });
    try {
        const name = username("ann");
        await ann.client.signUp({ family: "Smith", username: name, password: "password1" });
        await ann.client.put("contacts", "c1", { firstName: "Ann" });
        await ann.client.sync();
        const token = ann.client.currentSession!.token;
        // A write that cannot leave: the logout refuses to lose it, and stays signed in.
        offline = true;
        await ann.client.put("contacts", "c2", { firstName: "Unsent" });
        await assert.rejects(ann.client.logOut(), (error: unknown) => {
            return error instanceof SyncClientError && error.kind === "unpushedWrites" && error.pending.length === 1;
        });
        assert.ok(ann.client.isSignedIn);
        offline = false;
        await ann.client.logOut();
        assert.equal((await raw(server, token, "GET", "/contacts/c2")).status, 401, "revoked");
        assert.equal(ann.client.isSignedIn, false);
        assert.equal((await raw(server, token, "GET", "/ctcsync")).status, 401);
        assert.deepEqual(await ann.client.items("contacts"), []);
        assert.equal(await new FileTokenStore(ann.replicaPath + ".token").load(), undefined);

        await ann.client.logIn({ username: name, password: "password1" });
        await ann.client.sync();
        assert.deepEqual((await ann.client.items("contacts")).map((contact) => contact.id), ["c1", "c2"], "pushed by the logout");
        // Discarding: the unsent write is dropped, never pushed.
        await ann.client.put("contacts", "c3", { firstName: "Dropped" });
        await ann.client.logOut({ discardingPendingWrites: true });
        await ann.client.logIn({ username: name, password: "password1" });
        await ann.client.sync();
        assert.equal((await ann.client.items("contacts")).length, 2);
        // Revoked by another device: the next call answers 401, the session ends, the replica stays.
        const ended = next<undefined>((listener) => ann.client.on("sessionEnded", listener), "sessionEnded");
        await raw(server, ann.client.currentSession!.token, "POST", "/logout");
        await assert.rejects(ann.client.sync(), (error: unknown) => error instanceof SyncClientError && error.kind === "notSignedIn");
        await ended;
        assert.equal(ann.client.isSignedIn, false);
        assert.equal((await ann.client.items("contacts")).length, 2);
    } finally {
        await ann.close();
    }
});

test("ID-token sign-in: the first makes the account and its home space, the next finds it; a refused token names its check", async () => {
    const ann = await openClient(server);
    try {
        const first = await ann.client.signIn({ idToken: idToken("ann"), space: "Smith" });
        assert.equal(first.created, true);
        assert.deepEqual(
            first.spaces.map((space) => [space.name, space.role]),
            [["Smith", "owner"]]
        );
        assert.equal(ann.client.currentSession?.familyID, first.spaces[0]!.id);
        await ann.client.put("contacts", "c1", { firstName: "Ann" });
        await ann.client.sync();
        assert.equal((await ann.client.singleton("family"))?.name, "Smith");

        const again = await ann.client.signIn({ idToken: idToken("ann") });
        assert.equal(again.created, false);
        assert.equal(again.accountId, first.accountId);
        assert.equal((await ann.client.items("contacts")).length, 1, "the same account keeps its replica");

        const expired = idToken("ann", Math.floor(Date.now() / 1000) - 3600);
        await assert.rejects(ann.client.signIn({ idToken: expired }), (error: unknown) => {
            return error instanceof SyncClientError && error.kind === "idTokenRefused" && error.check === "expired" && error.code === "invalid_credentials";
        });
        await assert.rejects(ann.client.signIn({ idToken: "not.a.jwt" }), (error: unknown) => {
            return error instanceof SyncClientError && error.kind === "idTokenRefused" && error.check === "malformed";
        });
        assert.equal(ann.client.currentSession?.accountID, first.accountId, "a refused sign-in keeps the session");

        // Another account on this replica: its data is erased first (no unsent writes wait).
        const ben = await ann.client.signIn({ idToken: idToken("ben"), space: "Jones" });
        assert.equal(ben.created, true);
        assert.deepEqual(await ann.client.items("contacts"), []);
        // While writes wait, another account is refused and nothing is erased.
        await ann.client.put("contacts", "b1", { firstName: "Ben" });
        await assert.rejects(ann.client.signIn({ idToken: idToken("ann") }), (error: unknown) => {
            return error instanceof SyncClientError && error.kind === "unpushedWrites" && error.pending.length === 1;
        });
        assert.equal(ann.client.currentSession?.accountID, ben.accountId);
        assert.equal((await ann.client.items("contacts")).length, 1);
    } finally {
        await ann.close();
    }
});
