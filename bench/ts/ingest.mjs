// The TypeScript client's first sync and one remote change, against the raw download of the same list (issue 55).
// Not a test: figures, printed as one JSON line per mode. Run by bench/ts/run, which starts the server and alternates.
//
//   node ingest.mjs seed URL COUNT SEED.json        one family of COUNT contacts through the API (groups of 20 PUTs)
//   node ingest.mjs raw URL SEED.json               GET /api/v1/ctcsync with fetch (gzip), read whole and JSON.parse'd
//   node ingest.mjs client URL SEED.json DIST DRIVER REPLICA [CHANGES]
//        DRIVER node-sqlite | node-sqlite-full (synchronous = FULL) | memory: the first sync() into a fresh replica (its peak RSS), then CHANGES times one
//        contact PUT by another device and the next sync() timed (and its apply transaction alone), then CHANGES idle syncs.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [mode, url, ...rest] = process.argv.slice(2);

async function call(method, path, body, token) {
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    for (let attempt = 0; ; attempt++) {
        const answer = await fetch(`${url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await answer.text();
        if (answer.status < 300) return text ? JSON.parse(text) : undefined;
        if ((answer.status === 503 || answer.status === 429) && attempt < 20) {
            await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
            continue;
        }
        throw new Error(`${method} ${path}: ${answer.status} ${text.slice(0, 300)}`);
    }
}

/** A contact the size of bench/seed.py's (about 200 bytes of JSON). */
function contact(i, rev = 0) {
    const names = ["Martin", "Bernard", "Dubois", "Smith", "Garcia", "Müller"];
    return {
        firstName: `First${i}`,
        lastName: names[i % names.length],
        emails: [`person${i}.${rev}@example.org`],
        phones: [`+33 6 ${10_000_000 + ((i * 7919) % 89_999_999)}`],
        notes: "Met at the school fair; likes hiking. ".repeat(1 + (i % 3)),
    };
}

async function seed(count, out) {
    const username = `tsbench${Date.now() % 1_000_000_000}`;
    const account = await call("POST", "/signup", { family: username, username, password: "bench-password" });
    const limit = (await call("GET", "/")).limits.groupMaxRequests;
    let next = 0;
    const started = Date.now();
    async function worker() {
        for (;;) {
            const start = next;
            next += limit;
            if (start >= count) return;
            const requests = [];
            for (let i = start; i < Math.min(count, start + limit); i++) {
                requests.push({ id: String(i), method: "PUT", url: `/api/v1/contacts/c${String(i).padStart(6, "0")}`, body: contact(i) });
            }
            const answer = await call("POST", "/group", { requests }, account.token);
            const bad = answer.responses.find((response) => response.status >= 300);
            if (bad) throw new Error(`seed write refused: ${JSON.stringify(bad)}`);
        }
    }
    await Promise.all(Array.from({ length: 6 }, worker));
    const seeded = { token: account.token, accountID: account.accountId, familyID: account.familyId, username, count, seconds: (Date.now() - started) / 1000 };
    writeFileSync(out, JSON.stringify(seeded));
    console.log(JSON.stringify({ mode, ...seeded, token: undefined }));
}

async function raw(seeded) {
    const started = performance.now();
    const answer = await fetch(`${url}/api/v1/ctcsync`, { headers: { Authorization: `Bearer ${seeded.token}` } });
    const body = JSON.parse(await answer.text());
    const seconds = (performance.now() - started) / 1000;
    console.log(JSON.stringify({ mode, seconds, rows: body.updated.length, encoding: answer.headers.get("content-encoding"), maxRssMiB: process.resourceUsage().maxRSS / 1024 }));
}

/** A driver that times its transactions (the apply of a sync is one). */
function timed(driver, spans) {
    return {
        exec: (sql) => driver.exec(sql),
        query: (sql, params) => driver.query(sql, params),
        run: (sql, params) => driver.run(sql, params),
        close: () => driver.close(),
        async transaction(body) {
            const started = performance.now();
            try {
                return await driver.transaction(body);
            } finally {
                spans.push(performance.now() - started);
            }
        },
    };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function client(seeded, dist, driverName, replica, changes) {
    const api = await import(pathToFileURL(`${dist}/src/index.js`).href);
    const { NodeSqliteDriver } = await import(pathToFileURL(`${dist}/src/node.js`).href);
    const driver =
        driverName === "memory" ? new api.MemoryDriver() : NodeSqliteDriver.open(replica, { synchronous: driverName === "node-sqlite-full" ? "full" : "normal" });
    const spans = [];
    const storage = timed(driver, spans);
    const tokenStore = new api.MemoryTokenStore();
    await tokenStore.save({ token: seeded.token, accountID: seeded.accountID, familyID: seeded.familyID });
    const sync = await api.SyncClient.open({ serverUrl: url, storage, tokenStore, pushDelayMs: null, onlineEvents: null });
    let started = performance.now();
    const first = await sync.sync();
    const seconds = (performance.now() - started) / 1000;
    const firstApplyMs = Math.max(...spans);
    const maxRssMiB = process.resourceUsage().maxRSS / 1024;
    const held = await sync.heldCount("contacts");
    const change = [];
    const changeApply = [];
    for (let i = 0; i < changes; i++) {
        await call("PUT", `/contacts/c${String(i).padStart(6, "0")}`, contact(i, i + 1), seeded.token);
        spans.length = 0;
        started = performance.now();
        await sync.sync();
        change.push(performance.now() - started);
        changeApply.push(Math.max(...spans));
    }
    const idle = [];
    const idleApply = [];
    for (let i = 0; i < changes; i++) {
        spans.length = 0;
        started = performance.now();
        await sync.sync();
        idle.push(performance.now() - started);
        idleApply.push(Math.max(...spans));
    }
    await sync.close();
    await storage.close();
    console.log(
        JSON.stringify({
            mode,
            driver: driverName,
            seconds,
            rows: held,
            replaced: first.replaced.length,
            firstApplyMs,
            maxRssMiB,
            changeMedianMs: median(change),
            changeMaxMs: Math.max(...change),
            changeApplyMedianMs: median(changeApply),
            idleMedianMs: median(idle),
            idleApplyMedianMs: median(idleApply),
        })
    );
}

if (mode === "seed") await seed(Number(rest[0]), rest[1]);
else if (mode === "raw") await raw(JSON.parse(readFileSync(rest[0], "utf8")));
else if (mode === "client") await client(JSON.parse(readFileSync(rest[0], "utf8")), rest[1], rest[2], rest[3], Number(rest[4] ?? 9));
else throw new Error(`unknown mode ${mode}`);
