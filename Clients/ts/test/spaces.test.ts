// Spaces against the real server (protocol §15): list, create, invite, accept, members; one replica per space; a
// removed member's next sync erases the space's replica; a SpaceSet follows every space with one stream
// (GET /changes?spaces=all), syncing the one that moved and erasing the one the account lost.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { JsonObject, SpaceSet, SpaceUpdate, SyncClient, SyncClientError } from "../src/index.js";
import { inSpace } from "../src/http.js";
import { mediaSha } from "../src/media.js";
import { NodeSqliteDriver } from "../src/node.js";
import { OpenedClient, openClient, username } from "./support/clients.js";
import { next, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

test("a space's paths: under /spaces/{id} for what a space holds, unprefixed for the account's calls", () => {
    assert.equal(inSpace("/ctcsync?date=D", "s 1"), "/spaces/s%201/ctcsync?date=D");
    assert.equal(inSpace("/contacts/c1", "S"), "/spaces/S/contacts/c1");
    assert.equal(inSpace("/media/abc", "S"), "/spaces/S/media/abc");
    assert.equal(inSpace("/changes", "S"), "/spaces/S/changes");
    for (const path of ["/group", "/spaces", "/spaces/S/members", "/invitations/accept", "/model", "/", "/login", "/token", "/accounts"]) {
        assert.equal(inSpace(path, "S"), path);
    }
    assert.equal(inSpace("/contacts/c1", undefined), "/contacts/c1");
    const sha = "a".repeat(64);
    assert.equal(mediaSha(`/api/v1/media/${sha}`), sha);
    assert.equal(mediaSha(`https://api.example.com/api/v1/spaces/S/media/${sha}`), sha);
    assert.equal(mediaSha("/api/v1/media/ABC"), undefined);
    assert.equal(mediaSha("not a url"), undefined);
});

/** A client of `space` for the signed-in account of `account`, on a replica file of its own. */
async function spaceClient(account: OpenedClient, space: string, name: string): Promise<OpenedClient> {
    const replicaPath = server.path(`${name}.sqlite`);
    const storage = NodeSqliteDriver.open(replicaPath);
    const client = await account.client.forSpace(space, { storage });
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

/** Two accounts of their own families; Ann owns a space "Club" that Bob joined as a member by invitation. */
async function club(tag: string): Promise<{ ann: OpenedClient; bob: OpenedClient; annClub: OpenedClient; clubId: string; bobId: string }> {
    const ann = await openClient(server);
    const bob = await openClient(server);
    await ann.client.signUp({ family: "Smith", username: username("ann"), password: "password1" });
    await bob.client.signUp({ family: "Jones", username: username("bob"), password: "password1" });
    const created = await ann.client.createSpace("Club");
    assert.equal(created.role, "owner");
    const annClub = await spaceClient(ann, created.id, `ann-club-${tag}`);
    const invitation = await annClub.client.invite({ role: "member", uses: 1 });
    assert.equal(invitation.role, "member");
    const joined = await bob.client.acceptInvitation(invitation.code);
    assert.deepEqual([joined.id, joined.name, joined.role], [created.id, "Club", "member"]);
    return { ann, bob, annClub, clubId: created.id, bobId: bob.client.currentSession!.accountID };
}

test("spaces: create, invite, accept, list and members; one replica per space, each holding its own space's items", async () => {
    const { ann, bob, annClub, clubId, bobId } = await club("1");
    const bobClub = await spaceClient(bob, clubId, "bob-club");
    try {
        const listed = await bob.client.spaces();
        assert.deepEqual(
            listed.map((space) => [space.name, space.role, space.home]),
            [
                ["Jones", "owner", true],
                ["Club", "member", false],
            ]
        );
        assert.deepEqual((await annClub.client.members()).map((member) => member.role).sort(), ["member", "owner"]);

        await annClub.client.save("contacts", { id: "c1", firstName: "Club contact" });
        await annClub.client.push();
        await ann.client.save("contacts", { id: "h1", firstName: "Home contact" });
        await ann.client.push();
        await bobClub.client.sync();
        await bob.client.sync();
        assert.deepEqual((await bobClub.client.items("contacts")).map((item) => item.id), ["c1"]);
        assert.deepEqual(await bob.client.items("contacts"), [], "the home replica holds the home space only");
        assert.equal((await bobClub.client.singleton("family"))?.name, "Club", "a space's singleton is the space's");

        // Bob is removed: his next sync of the space answers 404, and the client erases that replica.
        await annClub.client.removeMember(bobId);
        const refused = await bobClub.client.sync().catch((error: unknown) => error);
        assert.ok(refused instanceof SyncClientError && refused.kind === "spaceRemoved", String(refused));
        assert.deepEqual(await bobClub.client.items("contacts"), []);
        assert.equal(await bobClub.client.syncDate(), undefined);
        assert.equal(bobClub.client.status.state, "error");
        // His home space is untouched.
        assert.deepEqual((await bob.client.spaces()).map((space) => space.name), ["Jones"]);
        await bob.client.sync();
    } finally {
        await annClub.close();
        await bobClub.close();
        await ann.close();
        await bob.close();
    }
});

test("a SpaceSet follows every space with one stream (?spaces=all): syncs the space that moved, erases the one the account lost", async () => {
    const { ann, bob, annClub, clubId, bobId } = await club("2");
    const opened: SyncClient[] = [];
    const storages: NodeSqliteDriver[] = [];
    const set = new SpaceSet(bob.client, async (space) => {
        const storage = NodeSqliteDriver.open(server.path(`bob-set-${space}.sqlite`));
        storages.push(storage);
        const client = await bob.client.forSpace(space, { storage });
        opened.push(client);
        return client;
    });
    const updates: SpaceUpdate[] = [];
    const listeners = new Set<(update: SpaceUpdate) => void>();
    const following = set.follow((update) => {
        updates.push(update);
        for (const listener of [...listeners]) listener(update);
    });
    const update = (what: string, accept: (update: SpaceUpdate) => boolean): Promise<SpaceUpdate> =>
        next<SpaceUpdate>(
            (listener) => {
                listeners.add(listener);
                return () => listeners.delete(listener);
            },
            what,
            accept
        );
    try {
        // At connection: the listing, then each space's date; the club's replica is opened and synced.
        await update("the club synced", (got) => got.kind === "synced" && got.space === clubId);
        assert.ok(updates.some((got) => got.kind === "spaces" && got.spaces.length === 2));
        assert.deepEqual(set.heldSpaces, [clubId]);
        const bobClub = await set.client(clubId);

        const arrived = next<JsonObject[]>((listener) => bobClub.observeItems("contacts", listener), "the club's contact", (items) => items.length === 1);
        await annClub.client.save("contacts", { id: "c1", firstName: "In the club" });
        await annClub.client.push();
        assert.equal((await arrived)[0]!.firstName, "In the club");

        const removed = update("the club removed", (got) => got.kind === "removed" && got.space === clubId);
        await annClub.client.removeMember(bobId);
        const gone = await removed;
        assert.ok(gone.kind === "removed");
        assert.deepEqual(await gone.client.items("contacts"), [], "the lost space's replica is erased");
        assert.equal(await gone.client.syncDate(), undefined);
        assert.deepEqual(set.heldSpaces, []);
    } finally {
        await following.stop();
        for (const client of opened) await client.close();
        for (const storage of storages) await storage.close();
        await annClub.close();
        await ann.close();
        await bob.close();
    }
});

test("live mode of a space's client: the space's notices make it sync; removed from the space, its stream is refused and the replica erased", async () => {
    const { ann, bob, annClub, clubId, bobId } = await club("3");
    const bobClub = await spaceClient(bob, clubId, "bob-club-live");
    try {
        await bobClub.client.sync();
        const connected = next<boolean>((listener) => bobClub.client.onStatus((status) => listener(status.liveConnected)), "live", (value) => value);
        bobClub.client.startLive();
        await connected;
        const arrived = next<JsonObject[]>((listener) => bobClub.client.observeItems("contacts", listener), "the club's contact", (items) => items.length === 1);
        await annClub.client.save("contacts", { id: "c1", firstName: "Live in the club" });
        await annClub.client.push();
        assert.equal((await arrived)[0]!.firstName, "Live in the club");

        const erased = next<JsonObject[]>((listener) => bobClub.client.observeItems("contacts", listener), "the replica erased", (items) => items.length === 0);
        const ended = next<boolean>((listener) => bobClub.client.onStatus((status) => listener(status.live)), "live mode ended", (value) => !value);
        await annClub.client.removeMember(bobId);
        await erased;
        await ended;
        assert.equal(await bobClub.client.syncDate(), undefined);
        assert.equal(bobClub.client.status.lastError?.kind, "spaceRemoved");
    } finally {
        await bobClub.close();
        await annClub.close();
        await ann.close();
        await bob.close();
    }
});
