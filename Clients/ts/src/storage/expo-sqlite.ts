import { bindAll, BindValue, plainRow } from "./values.js";
import { AsyncLock } from "./lock.js";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./driver.js";

/** The statements of expo-sqlite's asynchronous API (SDK 50+) that the driver uses, on a database or a transaction. */
export interface ExpoSqliteExecutor {
    execAsync(source: string): Promise<void>;
    getAllAsync<T>(source: string, params: BindValue[]): Promise<T[]>;
    runAsync(source: string, params: BindValue[]): Promise<{ changes: number; lastInsertRowId: number }>;
}

/**
 * The part of expo-sqlite's `SQLiteDatabase` (from `openDatabaseAsync(name)`) this driver uses, typed by structure so
 * that the client needs no dependency on Expo. `withExclusiveTransactionAsync` runs the task on a connection of its
 * own, in a transaction no other statement can enter; it commits when the task resolves, rolls back when it rejects.
 */
export interface ExpoSqliteDatabase extends ExpoSqliteExecutor {
    withExclusiveTransactionAsync(task: (txn: ExpoSqliteExecutor) => Promise<void>): Promise<void>;
    closeAsync(): Promise<void>;
}

/**
 * The replica in an Expo app through expo-sqlite: `new ExpoSqliteDriver(await openDatabaseAsync("replica.sqlite"))`.
 * Transactions are exclusive (`withExclusiveTransactionAsync`), and every call of the driver waits for the one before
 * (the `StorageDriver` contract), so a sync's transaction never sees a local write half-way.
 */
export class ExpoSqliteDriver implements StorageDriver {
    private readonly lock = new AsyncLock();
    private closed = false;

    constructor(private readonly db: ExpoSqliteDatabase) {}

    exec(sql: string): Promise<void> {
        return this.lock.run(() => this.open().execAsync(sql));
    }

    query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
        return this.lock.run(async () => rowsOf(await this.open().getAllAsync<Record<string, unknown>>(sql, bindAll(params))));
    }

    run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
        return this.lock.run(async () => ({ changes: (await this.open().runAsync(sql, bindAll(params))).changes }));
    }

    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        return this.lock.run(async () => {
            let result: T | undefined;
            await this.open().withExclusiveTransactionAsync(async (txn) => {
                let live = true;
                const guard = async <R>(work: () => Promise<R>): Promise<R> => {
                    if (!live) throw new Error("a statement on a transaction that has ended");
                    return work();
                };
                const tx: SqlExecutor = {
                    exec: (sql) => guard(() => txn.execAsync(sql)),
                    query: (sql, params) => guard(async () => rowsOf(await txn.getAllAsync<Record<string, unknown>>(sql, bindAll(params)))),
                    run: (sql, params) => guard(async () => ({ changes: (await txn.runAsync(sql, bindAll(params))).changes })),
                };
                try {
                    result = await body(tx);
                } finally {
                    live = false;
                }
            });
            return result as T;
        });
    }

    close(): Promise<void> {
        return this.lock.run(async () => {
            if (this.closed) return;
            this.closed = true;
            await this.db.closeAsync();
        });
    }

    private open(): ExpoSqliteDatabase {
        if (this.closed) throw new Error("the replica's database is closed");
        return this.db;
    }
}

function rowsOf(rows: Record<string, unknown>[]): SqlRow[] {
    return rows.map(plainRow);
}
