// The command line (src/cli.ts) run as a process with Node against the real server: signup, put, sync, ls, status,
// spaces, space-create, invite, accept; watch prints a sync when another device writes, and stops on SIGTERM. The
// replica it leaves is read by `syncapi client` (the Swift tool) too.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { swiftClient, username } from "./support/clients.js";
import { eventually, raw, rawLogIn, TestServer } from "./support/server.js";

let server: TestServer;

before(async () => {
    server = await TestServer.start();
});

after(async () => {
    await server?.stop();
});

const node = (globalThis as unknown as { process: { execPath: string } }).process.execPath;
const cli = fileURLToPath(new URL("../src/cli.js", import.meta.url));
const nodeFlags = ["--experimental-sqlite", "--disable-warning=ExperimentalWarning"];

/** Runs the command line; its exit code and output. */
function run(replica: string, args: string[], password = "password1"): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((done) => {
        execFile(
            node,
            [...nodeFlags, cli, ...args, "--server", server.url, "--replica", replica],
            { env: { ...process.env, SYNCAPI_PASSWORD: password } },
            (error, stdout, stderr) => done({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr })
        );
    });
}

test("the command line: signup, put, sync, ls, status, pending; spaces, space-create, invite, accept; usage errors", async () => {
    const replica = server.path("cli.sqlite");
    const name = username("ann");
    assert.deepEqual(await run(replica, ["signup", "--family", "Smith", "--username", name]), { code: 0, stdout: "signed up and signed in\n", stderr: "" });
    assert.equal((await run(replica, ["put", "contacts", "c1", '{"firstName":"Ann"}'])).stdout, "saved locally; queued for the next sync\n");
    assert.match((await run(replica, ["pending"])).stdout, /^pending put contacts\/c1\n$/);
    const synced = JSON.parse((await run(replica, ["sync", "--json"])).stdout) as { pushed: number; date: string };
    assert.equal(synced.pushed, 1);
    const listed = JSON.parse((await run(replica, ["ls", "contacts", "--json"])).stdout) as { id: string; firstName: string }[];
    assert.deepEqual(listed.map((item) => [item.id, item.firstName]), [["c1", "Ann"]]);
    assert.equal((await run(replica, ["status"])).stdout, `signed in: true; date: ${synced.date}; pending 0, failed 0\n`);
    // The Swift tool reads the same replica.
    const swift = await swiftClient(server, replica, ["ls", "contacts"]);
    assert.equal(swift.code, 0, swift.stderr);
    assert.match(swift.stdout, /"firstName":"Ann"/);

    const spaces = (await run(replica, ["spaces"])).stdout.trim().split("\n");
    assert.equal(spaces.length, 1);
    assert.match(spaces[0]!, /^\S+ {2}owner \(home\) {2}Smith$/);
    const created = (await run(replica, ["space-create", "--name", "Club"])).stdout.trim();
    const [clubId, role, clubName] = created.split(/ {2}/);
    assert.deepEqual([role, clubName], ["owner", "Club"]);
    const clubReplica = server.path("cli-club.sqlite");
    // The club's replica shares the session through its token file: sign in there too, then invite from it.
    assert.equal((await run(clubReplica, ["login", "--username", name, "--space", clubId!])).code, 0);
    const code = (await run(clubReplica, ["invite", "--role", "reader", "--space", clubId!])).stdout.trim();
    assert.match(code, /^\S{16,}$/);
    const bobReplica = server.path("cli-bob.sqlite");
    await run(bobReplica, ["signup", "--family", "Jones", "--username", username("bob")]);
    assert.equal((await run(bobReplica, ["accept", code])).stdout, `joined ${clubId} as reader: Club\n`);

    const usage = await run(replica, ["put", "contacts", "c2", "not json"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /JSON object/);
    assert.equal((await run(replica, ["frobnicate"])).code, 2);
});

test("watch: syncs, follows the change stream, prints the sync another device's write caused, stops on SIGTERM", async () => {
    const replica = server.path("cli-watch.sqlite");
    const name = username("ann");
    assert.equal((await run(replica, ["signup", "--family", "Smith", "--username", name])).code, 0);
    const child = spawn(node, [...nodeFlags, cli, "watch", "--server", server.url, "--replica", replica], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
        await eventually("watching", () => output.includes("watching (Ctrl-C to stop)"));
        assert.match(output, /^synced: 0 writes pushed, 0 refused; replaced .*; date \S+\n/);
        const other = await rawLogIn(server, name);
        await raw(server, other, "PUT", "/contacts/w1", { firstName: "From elsewhere" });
        await eventually("a sync after the notice", () => /\nsynced: date \S+; pending 0, failed 0\n/.test(output));
        const listed = await run(replica, ["ls", "contacts"]);
        assert.match(listed.stdout, /"firstName":"From elsewhere"/);
        // A write queued by another process in the same replica is pushed by the watcher.
        await run(replica, ["put", "contacts", "w2", '{"firstName":"Queued here"}']);
        await eventually("the watcher's push", () => output.includes("pushed: 1 writes, 0 refused"));
        assert.equal((await raw(server, other, "GET", "/contacts/w2")).body.firstName, "Queued here");
    } finally {
        child.kill("SIGTERM");
        assert.equal(await exited, 0, output);
    }
});
