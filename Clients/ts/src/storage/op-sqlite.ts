import { bindAll, BindValue, plainRow } from "./values.js";
import { AsyncLock } from "./lock.js";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./driver.js";

/** What `execute` answers in op-sqlite (`QueryResult`): the rows as objects, and how many rows a write changed. */
export interface OpSqliteResult {
    rows: Record<string, unknown>[];
    rowsAffected: number;
}

/** The handle op-sqlite gives a transaction's callback (`Transaction`): statements on the open transaction. */
export interface OpSqliteTransaction {
    execute(sql: string, params?: BindValue[]): Promise<OpSqliteResult>;
}

/**
 * The part of op-sqlite's database object (`DB`, from `open({ name })` of `@op-engineering/op-sqlite`) this driver
 * uses: typed here by structure so that the client needs no dependency on the library (nor React Native to compile).
 * `transaction` commits when the callback's promise resolves and rolls back when it rejects.
 */
export interface OpSqliteDatabase {
    execute(sql: string, params?: BindValue[]): Promise<OpSqliteResult>;
    transaction(fn: (tx: OpSqliteTransaction) => Promise<void>): Promise<void>;
    close(): void;
}

/**
 * The replica in React Native through op-sqlite (JSI, SQLite compiled into the app). Open the database yourself and
 * hand it over: `new OpSqliteDriver(open({ name: "replica.sqlite" }))`. op-sqlite queues its own transactions but lets
 * a lone `execute` run on the connection while one is open, so the driver serializes every call itself (the
 * `StorageDriver` contract: nothing interleaves with a transaction).
 */
export class OpSqliteDriver implements StorageDriver {
    private readonly lock = new AsyncLock();
    private closed = false;

    constructor(private readonly db: OpSqliteDatabase) {}

    exec(sql: string): Promise<void> {
        return this.lock.run(async () => {
            await this.open().execute(sql);
        });
    }

    query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
        return this.lock.run(async () => rowsOf(await this.open().execute(sql, bindAll(params))));
    }

    run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
        return this.lock.run(async () => ({ changes: (await this.open().execute(sql, bindAll(params))).rowsAffected }));
    }

    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        return this.lock.run(async () => {
            let result: T | undefined;
            await this.open().transaction(async (native) => {
                let live = true;
                const guard = async <R>(work: () => Promise<R>): Promise<R> => {
                    if (!live) throw new Error("a statement on a transaction that has ended");
                    return work();
                };
                const tx: SqlExecutor = {
                    exec: (sql) => guard(async () => void (await native.execute(sql))),
                    query: (sql, params) => guard(async () => rowsOf(await native.execute(sql, bindAll(params)))),
                    run: (sql, params) => guard(async () => ({ changes: (await native.execute(sql, bindAll(params))).rowsAffected })),
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
            this.db.close();
        });
    }

    private open(): OpSqliteDatabase {
        if (this.closed) throw new Error("the replica's database is closed");
        return this.db;
    }
}

function rowsOf(result: OpSqliteResult): SqlRow[] {
    return (result.rows ?? []).map(plainRow);
}
