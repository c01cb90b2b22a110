#!/usr/bin/env -S node --experimental-sqlite --disable-warning=ExperimentalWarning
// The client from a terminal: `node dist/src/cli.js <command> --server URL --replica FILE`, the TypeScript twin of
// `syncapi client` (Clients/SyncClient/Sources/SyncClientCommands): the same commands, options, output and replica
// file, so a deployment can be tried by hand or from a script with either. Node 22 (`--experimental-sqlite` on 22.12).
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SyncClient } from "./client.js";
import { SyncClientError } from "./errors.js";
import { isObject, JsonObject } from "./json.js";
import { FileMediaStore } from "./node-media.js";
import { FileTokenStore } from "./node.js";
import { SyncReport } from "./client.js";
import { NodeSqliteDriver } from "./storage/node-sqlite.js";

/** The parts of Node's `process` the command line uses (no @types/node in this repository). */
interface NodeProcess {
    argv: string[];
    env: Record<string, string | undefined>;
    stdout: { write(text: string): boolean };
    stderr: { write(text: string): boolean };
    stdin: AsyncIterable<Uint8Array>;
    exitCode: number | undefined;
    on(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
}

/** The help text (`help`), the Swift tool's with this file's name. */
export const usage = `usage: cli.js <command> --server URL --replica FILE [--json] [--page-size N] [--insecure] [--space ID]
  signup --family F --username U [--discard]   the password: SYNCAPI_PASSWORD, or one line on standard
  login --username U [--discard]               input (never an argument: ps and shell history would show it)
  login --id-token-file FILE [--new-space NAME] [--discard]   sign in with an identity provider's ID token
  logout [--discard] [--erase-failed]   push unsent writes (or discard them), revoke the token, empty the replica
  sync                        push, then one group of every sync, applied in one transaction
  ls <collection> [--parent ID] | get <collection> <id> [--parent ID]
  put <collection> <id> '<json>' [--parent ID]    offline: queued for the next sync
  delete <collection> <id> [--parent ID]          offline: queued for the next sync
  more <paginated or child collection> [--parent ID]
  watch                       sync on every change notice, push writes other processes queue, until Ctrl-C
  status | pending | verify | reset | model | help
  spaces                      the account's spaces: id, role, home, name
  space-create --name N       a new space the account owns
  invite --role R [--uses N]  an invitation code to this replica's space (owners)
  accept <code>               join the space of an invitation
--space ID: the replica holds that space (one replica per space); without it, the home space.`;

/** `--name value` options, `--flag` flags and positional arguments, split by hand as the Swift tool does (no dependency). */
export class Arguments {
    readonly positional: string[] = [];
    readonly options = new Map<string, string>();
    readonly flags = new Set<string>();
    static readonly flagNames = new Set(["json", "discard", "erase-failed", "help", "insecure"]);

    constructor(argv: string[]) {
        for (let index = 0; index < argv.length; index++) {
            const argument = argv[index]!;
            if (argument === "--") {
                this.positional.push(...argv.slice(index + 1));
                break;
            }
            if (argument.startsWith("--") && argument.length > 2) {
                const name = argument.slice(2);
                const equals = name.indexOf("=");
                if (equals >= 0) {
                    this.options.set(name.slice(0, equals), name.slice(equals + 1));
                } else if (Arguments.flagNames.has(name)) {
                    this.flags.add(name);
                } else {
                    const value = argv[index + 1];
                    if (value === undefined) throw SyncClientError.invalid(`--${name} needs a value`);
                    this.options.set(name, value);
                    index += 1;
                }
            } else {
                this.positional.push(argument);
            }
        }
    }

    option(name: string): string {
        const value = this.options.get(name);
        if (value === undefined) throw SyncClientError.invalid(`--${name} is required`);
        return value;
    }

    at(index: number): string {
        const value = this.positional[index];
        if (value === undefined) throw SyncClientError.invalid("missing argument (see `help`)");
        return value;
    }

    get parent(): { parent?: string } {
        const parent = this.options.get("parent");
        return parent === undefined ? {} : { parent };
    }
}

/** A report as `syncapi client sync` prints it. */
export function describe(report: SyncReport): string {
    let line = `synced: ${report.pushed} writes pushed, ${report.failed} refused`;
    if (report.conflicts > 0) line += `, ${report.conflicts} conflicts settled`;
    if (report.replaced.length > 0) line += `; replaced ${report.replaced.join(", ")}`;
    return line + `; date ${report.date ?? "-"}`;
}

/** JSON with keys sorted, as the Swift tool prints it. */
function json(value: unknown): string {
    return JSON.stringify(value, (_key, inner: unknown) =>
        isObject(inner) ? Object.fromEntries(Object.keys(inner).sort().map((key) => [key, (inner as JsonObject)[key]])) : inner
    );
}

/** The password: `SYNCAPI_PASSWORD`, else the first line of standard input; never an argument. */
async function password(args: Arguments, proc: NodeProcess): Promise<string> {
    if (args.options.has("password")) throw SyncClientError.invalid("--password is not accepted: set SYNCAPI_PASSWORD or write it on standard input");
    const fromEnvironment = proc.env.SYNCAPI_PASSWORD;
    if (fromEnvironment) return fromEnvironment;
    let text = "";
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdin) {
        text += decoder.decode(chunk, { stream: true });
        if (text.includes("\n")) break;
    }
    const line = text.split(/\r?\n/)[0] ?? "";
    if (line === "") throw SyncClientError.invalid("no password: set SYNCAPI_PASSWORD or write it on standard input");
    return line;
}

/** Runs one command; answers the exit code (0 success, 1 failure, 2 usage). */
export async function run(argv: string[], proc: NodeProcess): Promise<number> {
    const print = (line: string): void => void proc.stdout.write(line + "\n");
    let args: Arguments;
    try {
        args = new Arguments(argv);
    } catch (error) {
        proc.stderr.write(`cli: ${(error as Error).message}\n`);
        return 2;
    }
    const command = args.positional[0];
    if (command === undefined || command === "help" || args.flags.has("help")) {
        print(usage);
        return command === undefined && argv.length === 0 ? 2 : 0;
    }
    args.positional.shift();
    let storage: NodeSqliteDriver | undefined;
    let client: SyncClient | undefined;
    try {
        const replicaPath = args.option("replica");
        const server = args.option("server");
        const pageSize = args.options.get("page-size");
        if (pageSize !== undefined && !(Number(pageSize) > 0)) throw SyncClientError.invalid("--page-size takes a positive number");
        storage = NodeSqliteDriver.open(replicaPath);
        const space = args.options.get("space");
        client = await SyncClient.open({
            serverUrl: server,
            storage,
            tokenStore: new FileTokenStore(replicaPath + ".token"),
            mediaStore: FileMediaStore.beside(replicaPath),
            allowsInsecureHTTP: args.flags.has("insecure"),
            pushDelayMs: command === "watch" ? 1000 : null,
            onlineEvents: null,
            ...(pageSize === undefined ? {} : { pageSize: Number(pageSize) }),
            ...(space === undefined ? {} : { space }),
        });
        await runCommand(command, args, client, proc, print);
        return 0;
    } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        proc.stderr.write(`cli: ${message.split("\n")[0]}\n`);
        return error instanceof SyncClientError && error.kind === "invalid" ? 2 : 1;
    } finally {
        await client?.close().catch(() => undefined);
        await storage?.close().catch(() => undefined);
    }
}

async function runCommand(command: string, args: Arguments, client: SyncClient, proc: NodeProcess, print: (line: string) => void): Promise<void> {
    const asJson = args.flags.has("json");
    const discard = args.flags.has("discard");
    switch (command) {
        case "signup":
            await client.signUp({ family: args.option("family"), username: args.option("username"), password: await password(args, proc), discardingPendingWrites: discard });
            return print(asJson ? json({ signedIn: true }) : "signed up and signed in");
        case "login": {
            const file = args.options.get("id-token-file");
            if (file !== undefined) {
                const idToken = (file === "-" ? await password(args, proc) : readFileSync(file, "utf8")).trim();
                const space = args.options.get("new-space");
                const signedIn = await client.signIn({ idToken, discardingPendingWrites: discard, ...(space === undefined ? {} : { space }) });
                return print(asJson ? json({ signedIn: true }) : `${signedIn.created ? "account made and signed in" : "signed in"} (${signedIn.accountId})`);
            }
            await client.logIn({ username: args.option("username"), password: await password(args, proc), discardingPendingWrites: discard });
            return print(asJson ? json({ signedIn: true }) : "signed in");
        }
        case "logout":
            await client.logOut({ discardingPendingWrites: discard, erasingFailedWrites: args.flags.has("erase-failed") });
            return print(asJson ? json({ signedIn: false }) : "signed out; the replica is empty");
        case "sync": {
            const report = await client.sync();
            return print(asJson ? json(report) : describe(report));
        }
        case "ls": {
            const items = await client.items(args.at(0), args.parent);
            return print(asJson ? json(items) : items.map((item) => json(item)).join("\n"));
        }
        case "get": {
            const item = await client.item(args.at(0), args.at(1), args.parent);
            if (!item) throw new SyncClientError("server", "404 not_found: not in the replica", { status: 404, code: "not_found" });
            return print(json(item));
        }
        case "put": {
            let body: unknown;
            try {
                body = JSON.parse(args.at(2));
            } catch {
                body = undefined;
            }
            if (!isObject(body)) throw SyncClientError.invalid("the item must be a JSON object");
            await client.save(args.at(0), { ...body, id: args.at(1) }, args.parent);
            return print(asJson ? json({ queued: true }) : "saved locally; queued for the next sync");
        }
        case "delete":
            await client.delete(args.at(0), args.at(1), args.parent);
            return print(asJson ? json({ queued: true }) : "deleted locally; queued for the next sync");
        case "more": {
            const complete = await client.loadMore(args.at(0), args.parent);
            return print(asJson ? json({ nomore: complete }) : complete ? "the whole list is here" : "more remain");
        }
        case "model": {
            const model = await client.serverModel(true);
            const collections = [...model.collections.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
            if (asJson) return print(json({ digest: model.digest, collections: collections.map((c) => ({ name: c.name, kind: c.kind, sync: c.sync, parent: c.parent })) }));
            print(`model (digest ${model.digest.slice(0, 12)})`);
            for (const c of collections) print(`  ${c.name}: ${c.kind}${c.sync ? `, synced by ${c.sync}` : ""}${c.parent ? `, child of ${c.parent}` : ""}`);
            return;
        }
        case "spaces": {
            const spaces = await client.spaces();
            return print(asJson ? json(spaces) : spaces.map((space) => `${space.id}  ${space.role}${space.home ? " (home)" : ""}  ${space.name}`).join("\n"));
        }
        case "space-create": {
            const space = await client.createSpace(args.option("name"));
            return print(asJson ? json(space) : `${space.id}  ${space.role}  ${space.name}`);
        }
        case "invite": {
            const uses = args.options.get("uses");
            if (uses !== undefined && !(Number(uses) > 0)) throw SyncClientError.invalid("--uses takes a positive number");
            const invitation = await client.invite({ role: args.option("role"), uses: uses === undefined ? 1 : Number(uses) });
            return print(asJson ? json(invitation) : invitation.code);
        }
        case "accept": {
            const space = await client.acceptInvitation(args.at(0));
            return print(asJson ? json(space) : `joined ${space.id} as ${space.role}: ${space.name}`);
        }
        case "status":
            return print(await describeStatus(client, asJson));
        case "pending": {
            const pending = (await client.pendingOperations()).map((op) => ({ op: op.kind, collection: op.collection, id: op.id, parent: op.parent }));
            const failed = (await client.failedOperations()).map((op) => ({ op: op.kind, collection: op.collection, id: op.id, parent: op.parent, status: op.status, code: op.code, detail: op.detail }));
            if (asJson) return print(json({ pending, failed }));
            const lines = [
                ...pending.map((op) => `pending ${op.op} ${op.collection}/${op.parent ? `${op.parent}/` : ""}${op.id}`),
                ...failed.map((op) => `failed ${op.op} ${op.collection}/${op.id}: ${op.status} ${op.code} ${op.detail}`),
            ];
            return print(lines.length === 0 ? "nothing pending" : lines.join("\n"));
        }
        case "verify": {
            const report = await client.verify();
            if (asJson) return print(json({ checked: report.checked, repaired: report.repaired, date: report.date }));
            return print(report.exact ? `exact: ${report.checked.join(", ")}` : `repaired: ${report.repaired.join(", ")}`);
        }
        case "reset":
            await client.reset();
            return print(asJson ? json({ done: true }) : "the replica is empty; the next sync downloads everything");
        case "watch":
            return watch(client, proc, print, asJson);
        default:
            throw SyncClientError.invalid(`unknown command ${command} (see \`help\`)`);
    }
}

async function describeStatus(client: SyncClient, asJson: boolean): Promise<string> {
    const status = client.status;
    const date = await client.syncDate();
    if (asJson) {
        return json({ signedIn: status.signedIn, state: status.state, date, pending: status.pendingWrites, failed: status.failedWrites, lastError: status.lastError?.message });
    }
    return `signed in: ${status.signedIn}; date: ${date ?? "-"}; pending ${status.pendingWrites}, failed ${status.failedWrites}`;
}

/**
 * Syncs, then keeps the change stream open (live mode) and prints every sync until SIGINT or SIGTERM. Writes another
 * process queues in the same replica file (`put`) are pushed within two seconds: the queue is read every second.
 */
async function watch(client: SyncClient, proc: NodeProcess, print: (line: string) => void, asJson: boolean): Promise<void> {
    const first = await client.sync();
    print(asJson ? json(first) : describe(first));
    const stopSynced = client.on("synced", (report) => {
        void client.syncDate().then((date) => {
            const status = client.status;
            print(asJson ? json({ ...report, pending: status.pendingWrites, failed: status.failedWrites }) : `synced: date ${date ?? "-"}; pending ${status.pendingWrites}, failed ${status.failedWrites}`);
        });
    });
    const poller = setInterval(() => {
        void client
            .pendingOperations()
            .then(async (pending) => {
                if (pending.length === 0) return;
                const pushed = await client.push();
                if (pushed.pushed + pushed.failed > 0 && !asJson) print(`pushed: ${pushed.pushed} writes, ${pushed.failed} refused`);
            })
            .catch(() => undefined);
    }, 1000);
    client.startLive();
    if (!asJson) print("watching (Ctrl-C to stop)");
    await new Promise<void>((resolve) => {
        proc.on("SIGINT", resolve);
        proc.on("SIGTERM", resolve);
    });
    clearInterval(poller);
    stopSynced();
    await client.stopLive();
}

const proc = (globalThis as unknown as { process: NodeProcess }).process;
/** Run as a program (`node cli.js`, or the package's binary: a symlink to this file), not imported. */
function isMain(): boolean {
    const script = proc.argv[1];
    if (script === undefined) return false;
    try {
        return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
    } catch {
        return false;
    }
}

if (isMain()) {
    void run(proc.argv.slice(2), proc).then((code) => {
        proc.exitCode = code;
    });
}
