// A real SyncAPI server for the tests: the repository's built binary, on a free port, with its SQLite file in a
// temporary folder; started by a test file and stopped at its end. Waits are for events (the health check answering,
// the process exiting), never for fixed times.
import { ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** `SYNCAPI_BIN`, else the repository's debug build (this file runs from Clients/ts/dist/test/support). */
export function serverBinary(): string {
    if (process.env.SYNCAPI_BIN) return process.env.SYNCAPI_BIN;
    const here = dirname(fileURLToPath(import.meta.url));
    return resolve(here, "../../../../../.build/debug/syncapi");
}

/** A free TCP port on the loopback interface (the system's choice). */
export function freePort(): Promise<number> {
    return new Promise((done) => {
        const server = createServer();
        server.listen(0, "127.0.0.1", () => {
            const address = server.address();
            const port = typeof address === "object" && address !== null ? address.port : 0;
            server.close(() => done(port));
        });
    });
}

/** Resolves once `check` answers true, trying again at each turn of `every` ms; rejects after `within` ms. */
export async function eventually(what: string, check: () => Promise<boolean> | boolean, within = 60_000, every = 50): Promise<void> {
    const deadline = Date.now() + within;
    for (;;) {
        if (await check()) return;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, every));
    }
}

export class TestServer {
    private process: ChildProcess | undefined;
    private log = "";

    private constructor(
        readonly folder: string,
        readonly port: number,
        private extraArguments: string[]
    ) {}

    /** The URL clients are given. */
    get url(): string {
        return `http://127.0.0.1:${this.port}`;
    }

    /** Starts a server with a new database (and `extraArguments`, e.g. `--identity FILE`). */
    static async start(extraArguments: string[] = []): Promise<TestServer> {
        const folder = mkdtempSync(join(tmpdir(), "syncapi-ts-"));
        const server = new TestServer(folder, await freePort(), extraArguments);
        await server.launch();
        return server;
    }

    /** A file path in the server's temporary folder (replicas, token files). */
    path(name: string): string {
        return join(this.folder, name);
    }

    /**
     * Starts the process (again, on the same port and database, after `kill`; with other arguments when given: an
     * operator who changed the server's limits), and waits for `/health` to answer 200.
     */
    async launch(extraArguments?: string[]): Promise<void> {
        if (extraArguments) this.extraArguments = extraArguments;
        const binary = serverBinary();
        // Someone else may be rebuilding the Swift tree: the binary comes back when the build ends.
        await eventually(`the server binary ${binary}`, () => existsSync(binary), 600_000, 500);
        const child = spawn(
            binary,
            ["serve", "--port", String(this.port), "--database", `sqlite:${join(this.folder, "server.sqlite")}`, "--bcrypt-cost", "4", ...this.extraArguments],
            { stdio: ["ignore", "pipe", "pipe"] }
        );
        this.process = child;
        const keep = (chunk: { toString(): string }): void => {
            this.log = (this.log + chunk.toString()).slice(-20_000);
        };
        child.stdout?.on("data", keep);
        child.stderr?.on("data", keep);
        let exited = false;
        child.once("exit", () => {
            exited = true;
        });
        await eventually("the server's /health", async () => {
            if (exited) throw new Error(`the server exited at start:\n${this.log}`);
            try {
                const answer = await fetch(`${this.url}/health`);
                await answer.arrayBuffer();
                return answer.status === 200;
            } catch {
                return false;
            }
        });
    }

    /** Kills the process at once (an outage: the database file stays for `launch`). */
    async kill(): Promise<void> {
        await this.stopProcess("SIGKILL");
    }

    /** Stops the server and removes its folder. */
    async stop(): Promise<void> {
        await this.stopProcess("SIGTERM");
        rmSync(this.folder, { recursive: true, force: true });
    }

    private async stopProcess(signal: string): Promise<void> {
        const child = this.process;
        this.process = undefined;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((done) => child.once("exit", () => done()));
        child.kill(signal);
        // SIGTERM ends within a few seconds (protocol §8); past 10 s it is killed.
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
    }

    /** The server's output so far (for a failing test's message). */
    output(): string {
        return this.log;
    }
}

/** A raw authenticated call, as another device would make it (no client, no replica). */
export async function raw(
    server: TestServer,
    token: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {}
): Promise<{ status: number; body: any; etag: string | null }> {
    const init: RequestInit = { method, headers: { Authorization: `Bearer ${token}`, ...headers } };
    if (body !== undefined) {
        init.body = JSON.stringify(body);
        (init.headers as Record<string, string>)["Content-Type"] = "application/json";
    }
    const answer = await fetch(`${server.url}/api/v1${path}`, init);
    const text = await answer.text();
    return { status: answer.status, body: text ? JSON.parse(text) : undefined, etag: answer.headers.get("ETag") };
}

/** Signs up a family with a raw call; its token and ids. */
export async function rawSignUp(server: TestServer, family: string, username: string): Promise<{ token: string; accountId: string; familyId: string }> {
    const answer = await fetch(`${server.url}/api/v1/signup`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ family, username, password: "password1" }),
    });
    if (answer.status !== 201) throw new Error(`signup answered ${answer.status}: ${await answer.text()}`);
    return (await answer.json()) as { token: string; accountId: string; familyId: string };
}

/** Signs in with a raw call (another device of the same account). */
export async function rawLogIn(server: TestServer, username: string, password = "password1"): Promise<string> {
    const answer = await fetch(`${server.url}/api/v1/login`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ username, password }),
    });
    if (answer.status !== 200) throw new Error(`login answered ${answer.status}: ${await answer.text()}`);
    return ((await answer.json()) as { token: string }).token;
}

/** Resolves with the next value of a client event (or rejects after `within` ms). */
export function next<T>(
    on: (listener: (value: T) => void) => () => void,
    what: string,
    accept: (value: T) => boolean = () => true,
    within = 60_000
): Promise<T> {
    return new Promise((done, fail) => {
        // `on` may call the listener before it returns (`onStatus` calls it at once with the current status): the
        // value may be accepted before `stop` exists. Calling `stop` then threw inside the listener, which the client
        // swallows, with the timer already cleared: the promise never settled (a lifecycle test hung once in CI).
        let settled = false;
        let stop: (() => void) | undefined;
        const timer = setTimeout(() => {
            settled = true;
            stop?.();
            fail(new Error(`timed out waiting for ${what}`));
        }, within);
        stop = on((value) => {
            if (settled || !accept(value)) return;
            settled = true;
            clearTimeout(timer);
            stop?.();
            done(value);
        });
        if (settled) stop();
    });
}
