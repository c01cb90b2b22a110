import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { DatabaseSync, StatementSync } from "node:sqlite";
import { AsyncLock } from "./lock.js";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./driver.js";

/**
 * The replica in an SQLite file through Node's built-in `node:sqlite` (Node 22.13+, or 22.12 with
 * `--experimental-sqlite`). One connection, WAL journal, statements prepared once; the calls of the driver are
 * serialized by a lock, so a transaction (which awaits between its statements) is never interleaved with another call.
 * The file and its WAL companions are readable by their owner only (0600: they hold every record of the space).
 */
export class NodeSqliteDriver implements StorageDriver {
    private readonly statements = new Map<string, StatementSync>();
    private readonly lock = new AsyncLock();
    private closed = false;

    private constructor(
        private readonly db: DatabaseSync,
        readonly path: string
    ) {}

    /**
     * Opens (creating if needed) the database at `path` (`:memory:` for a replica that lives as long as the process).
     * `synchronous`: `normal` (default) commits without waiting for the disk (WAL stays consistent: a power loss may
     * undo the last transactions, never corrupt the file; SQLite's advice for WAL, and Android's default); `full`
     * flushes the WAL at every commit (about 4 ms here: more than a whole sync of one change costs otherwise).
     */
    static open(path: string, options: { synchronous?: "normal" | "full" } = {}): NodeSqliteDriver {
        const file = path !== ":memory:" && !path.startsWith("file:");
        if (file && !existsSync(path)) writeFileSync(path, "", { mode: 0o600, flag: "wx" });
        const db = new DatabaseSync(path);
        db.exec("PRAGMA busy_timeout = 10000");
        if (file) {
            db.exec("PRAGMA journal_mode = WAL");
            db.exec(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
            for (const companion of [path, path + "-wal", path + "-shm"]) {
                if (existsSync(companion)) chmodSync(companion, 0o600);
            }
        }
        return new NodeSqliteDriver(db, path);
    }

    exec(sql: string): Promise<void> {
        return this.lock.run(async () => this.direct.exec(sql));
    }

    query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        return this.lock.run(async () => this.direct.query(sql, params));
    }

    run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
        return this.lock.run(async () => this.direct.run(sql, params));
    }

    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        return this.lock.run(async () => {
            this.check();
            let open = true;
            const guard = <R>(work: () => R): Promise<R> => {
                if (!open) return Promise.reject(new Error("a statement on a transaction that has ended"));
                try {
                    return Promise.resolve(work());
                } catch (error) {
                    return Promise.reject(error);
                }
            };
            const tx: SqlExecutor = {
                exec: (sql) => guard(() => this.direct.exec(sql)),
                query: (sql, params = []) => guard(() => this.direct.query(sql, params)),
                run: (sql, params = []) => guard(() => this.direct.run(sql, params)),
            };
            this.db.exec("BEGIN IMMEDIATE");
            try {
                const result = await body(tx);
                open = false;
                this.db.exec("COMMIT");
                return result;
            } catch (error) {
                open = false;
                this.db.exec("ROLLBACK");
                throw error;
            }
        });
    }

    close(): Promise<void> {
        return this.lock.run(async () => {
            if (this.closed) return;
            this.closed = true;
            this.statements.clear();
            this.db.close();
        });
    }

    /** The statements themselves, run at once (under the lock, or inside the transaction that holds it). */
    private readonly direct = {
        exec: (sql: string): void => {
            this.check();
            this.db.exec(sql);
        },
        query: (sql: string, params: readonly SqlValue[]): SqlRow[] => {
            // Plain objects (node:sqlite's rows have a null prototype).
            return this.prepared(sql)
                .all(...params.map(bind))
                .map((row) => ({ ...row }));
        },
        run: (sql: string, params: readonly SqlValue[]): { changes: number } => {
            return { changes: Number(this.prepared(sql).run(...params.map(bind)).changes) };
        },
    };

    private prepared(sql: string): StatementSync {
        this.check();
        let statement = this.statements.get(sql);
        if (!statement) {
            statement = this.db.prepare(sql);
            this.statements.set(sql, statement);
        }
        return statement;
    }

    private check(): void {
        if (this.closed) throw new Error("the replica's database is closed");
    }
}

function bind(value: SqlValue | undefined): SqlValue {
    return value === undefined ? null : value;
}
