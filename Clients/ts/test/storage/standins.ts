// Stand-ins for the React Native SQLite libraries: their documented asynchronous methods (op-sqlite's `open`, `execute`,
// `transaction`, `close`; expo-sqlite's `openDatabaseAsync`, `execAsync`, `getAllAsync`, `runAsync`,
// `withExclusiveTransactionAsync`, `closeAsync`) over a real SQLite file through node:sqlite, with the libraries'
// shapes: op-sqlite answers blobs as ArrayBuffer and commits a transaction whose callback resolves; expo-sqlite runs an
// exclusive transaction on a second connection to the same file. The drivers never see node:sqlite.
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import type { ExpoSqliteDatabase, ExpoSqliteExecutor, OpSqliteDatabase, OpSqliteResult, OpSqliteTransaction } from "../../src/index.js";

type Bind = null | number | string | Uint8Array;

/** Runs `sql` on `db` the way both libraries do: several statements without parameters run in turn, one otherwise. */
function execute(db: DatabaseSync, sql: string, params: Bind[]): { rows: Record<string, unknown>[]; changes: number } {
    const body = sql.trim().replace(/;$/, "");
    if (params.length === 0 && body.includes(";")) {
        db.exec(sql);
        return { rows: [], changes: 0 };
    }
    const statement = db.prepare(sql);
    if (/^\s*(SELECT|WITH|PRAGMA|VALUES)\b/i.test(sql) || /\bRETURNING\b/i.test(sql)) return { rows: statement.all(...params).map((row) => ({ ...row })), changes: 0 };
    return { rows: [], changes: Number(statement.run(...params).changes) };
}

function connect(path: string): DatabaseSync {
    const db = new DatabaseSync(path);
    db.exec("PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL");
    return db;
}

/** `open({ name, location })` of `@op-engineering/op-sqlite`. */
export function opSqliteOpen(options: { name: string; location: string }): OpSqliteDatabase {
    const db = connect(join(options.location, options.name));
    const answer = (sql: string, params: Bind[] = []): OpSqliteResult => {
        const { rows, changes } = execute(db, sql, params);
        const shaped = rows.map((row) =>
            Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value instanceof Uint8Array ? value.slice().buffer : value]))
        );
        return { rows: shaped, rowsAffected: changes };
    };
    let queue: Promise<void> = Promise.resolve();
    return {
        execute: async (sql, params) => answer(sql, params),
        transaction(fn) {
            // op-sqlite queues transactions one after the other; BEGIN, the callback, COMMIT (ROLLBACK when it throws).
            const run = queue.then(async () => {
                db.exec("BEGIN TRANSACTION");
                const tx: OpSqliteTransaction = { execute: async (sql, params) => answer(sql, params) };
                try {
                    await fn(tx);
                    db.exec("COMMIT");
                } catch (error) {
                    db.exec("ROLLBACK");
                    throw error;
                }
            });
            queue = run.catch(() => undefined);
            return run;
        },
        close: () => db.close(),
    };
}

/** `openDatabaseAsync(name, options, directory)` of expo-sqlite (SDK 50+). */
export async function expoOpenDatabaseAsync(name: string, _options: object, directory: string): Promise<ExpoSqliteDatabase> {
    const path = join(directory, name);
    const db = connect(path);
    const executor = (on: DatabaseSync): ExpoSqliteExecutor => ({
        execAsync: async (source) => void on.exec(source),
        getAllAsync: async <T>(source: string, params: Bind[]) => execute(on, source, params).rows as T[],
        runAsync: async (source, params) => {
            const statement = on.prepare(source);
            const result = statement.run(...params);
            return { changes: Number(result.changes), lastInsertRowId: Number(result.lastInsertRowid) };
        },
    });
    return {
        ...executor(db),
        async withExclusiveTransactionAsync(task) {
            // expo-sqlite opens a connection of its own for an exclusive transaction.
            const own = connect(path);
            try {
                own.exec("BEGIN EXCLUSIVE");
                try {
                    await task(executor(own));
                    own.exec("COMMIT");
                } catch (error) {
                    own.exec("ROLLBACK");
                    throw error;
                }
            } finally {
                own.close();
            }
        },
        closeAsync: async () => db.close(),
    };
}
