// The README's live, spaces and media blocks (regions of examples/getting-started.ts) run against a real server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { followContacts, joinSpace, openAppClient, postPhoto } from "../examples/getting-started.js";
import { SyncStatus } from "../src/index.js";
import { username } from "./support/clients.js";
import { eventually, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

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
