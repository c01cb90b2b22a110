// A driver that runs every statement twice, on node:sqlite and on the in-memory statement table, and fails on the
// first difference of rows or change counts: the client run over it proves the table does what SQLite does, for each
// statement the client sent. `compareTables` then compares every table whole.
import assert from "node:assert/strict";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "../../src/index.js";
import { NodeSqliteDriver } from "../../src/node.js";
import { ReplicaTables } from "../../src/storage/replica-tables.js";
import { StatementDriver } from "../../src/storage/statement-driver.js";

/** The tables of each path, kept across reopenings (what a persistent store would give back). */
const kept = new Map<string, ReplicaTables>();

export class DualDriver implements StorageDriver {
    readonly sqlite: NodeSqliteDriver;
    readonly memory: StatementDriver;
    /** Every distinct statement text run (to tell which the client used). */
    static readonly seen = new Set<string>();

    constructor(path: string) {
        this.sqlite = NodeSqliteDriver.open(path);
        let tables = kept.get(path);
        if (!tables) kept.set(path, (tables = new ReplicaTables()));
        this.memory = new StatementDriver(tables);
    }

    exec(sql: string): Promise<void> {
        return both(sql, [], (db) => db.exec(sql).then(() => ({ rows: [], changes: 0 })), this.sqlite, this.memory).then(() => undefined);
    }

    query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        return both(sql, params, async (db) => ({ rows: await db.query(sql, params), changes: 0 }), this.sqlite, this.memory).then((r) => r.rows);
    }

    run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
        return both(sql, params, async (db) => ({ rows: [], changes: (await db.run(sql, params)).changes }), this.sqlite, this.memory).then((r) => ({
            changes: r.changes,
        }));
    }

    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        return this.sqlite.transaction((left) =>
            this.memory.transaction((right) =>
                body({
                    exec: (sql) => both(sql, [], (db) => db.exec(sql).then(() => ({ rows: [], changes: 0 })), left, right).then(() => undefined),
                    query: (sql, params = []) => both(sql, params, async (db) => ({ rows: await db.query(sql, params), changes: 0 }), left, right).then((r) => r.rows),
                    run: (sql, params = []) =>
                        both(sql, params, async (db) => ({ rows: [], changes: (await db.run(sql, params)).changes }), left, right).then((r) => ({ changes: r.changes })),
                })
            )
        );
    }

    async close(): Promise<void> {
        await this.compareTables();
        await this.sqlite.close();
        await this.memory.close();
    }

    /** Every table of SQLite's file against the in-memory one, row for row. */
    async compareTables(): Promise<void> {
        for (const store of this.memory.tables.stores) {
            const sqliteRows = (await this.sqlite.query(`SELECT * FROM ${store.name}`)).map(canonical).sort();
            const memoryRows = [...store.rows.values()].map(canonical).sort();
            assert.deepEqual(memoryRows, sqliteRows, `table ${store.name}`);
        }
    }
}

function canonical(row: Record<string, unknown>): string {
    return JSON.stringify(Object.keys(row).sort().map((key) => [key, row[key]]));
}

async function both(
    sql: string,
    params: readonly SqlValue[],
    call: (db: SqlExecutor) => Promise<{ rows: SqlRow[]; changes: number }>,
    sqlite: SqlExecutor,
    memory: SqlExecutor
): Promise<{ rows: SqlRow[]; changes: number }> {
    DualDriver.seen.add(sql.replace(/\s+/g, " ").trim());
    const expected = await call(sqlite).then(
        (value) => ({ value }),
        (error: unknown) => ({ error })
    );
    const actual = await call(memory).then(
        (value) => ({ value }),
        (error: unknown) => ({ error })
    );
    const what = `${sql.replace(/\s+/g, " ").trim()} ${JSON.stringify(params)}`;
    if ("error" in expected) {
        assert.ok("error" in actual, `SQLite refused, the table did not: ${what}`);
        throw expected.error;
    }
    if ("error" in actual) throw new Error(`the table refused what SQLite ran: ${what}: ${String(actual.error)}`);
    assert.deepEqual(actual.value, expected.value, what);
    return expected.value;
}
