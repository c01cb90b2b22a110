import { AsyncLock } from "./lock.js";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./driver.js";
import { ReplicaTables, TableChanges } from "./replica-tables.js";
import { normalizeStatement, runStatement, StatementOutcome } from "./replica-statements.js";
import { migrations } from "../schema.js";

/** The schema's own texts, which the in-memory tables already are: `exec` takes them as done. */
const schemaTexts = new Set([...migrations.map((migration) => normalizeStatement(migration.sql)), normalizeStatement("CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")]);

/** Where a `StatementDriver` keeps its rows between launches: each change is written before the call that made it resolves. */
export interface TablePersistence {
    write(changes: TableChanges): Promise<void>;
    close(): Promise<void>;
}

/**
 * A `StorageDriver` without an SQL engine: the replica's tables in memory, each statement of the client carried out
 * by `replica-statements.ts`, and (when given) every committed change written to a `TablePersistence` before the call
 * resolves: the IndexedDB driver is this over IndexedDB. Without persistence it is a replica that lives as long as
 * the page or process (`MemoryDriver`). Calls are serialized; a transaction's statements run on the tables at once
 * and are undone whole if its body throws or its changes cannot be written.
 */
export class StatementDriver implements StorageDriver {
    private readonly lock = new AsyncLock();
    private closed = false;

    constructor(
        readonly tables: ReplicaTables = new ReplicaTables(),
        private readonly persistence?: TablePersistence
    ) {}

    exec(sql: string): Promise<void> {
        return this.lock.run(() => this.atomically(() => void this.execText(sql)));
    }

    query(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        return this.lock.run(() => this.atomically(() => this.statement(sql, params).rows));
    }

    run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
        return this.lock.run(() => this.atomically(() => ({ changes: this.statement(sql, params).changes })));
    }

    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        return this.lock.run(async () => {
            let live = true;
            const guard = async <R>(work: () => R): Promise<R> => {
                if (!live) throw new Error("a statement on a transaction that has ended");
                return this.undoing(work);
            };
            const tx: SqlExecutor = {
                exec: (sql) => guard(() => void this.execText(sql)),
                query: (sql, params = []) => guard(() => this.statement(sql, params).rows),
                run: (sql, params = []) => guard(() => ({ changes: this.statement(sql, params).changes })),
            };
            return this.atomically(async () => {
                try {
                    return await body(tx);
                } finally {
                    live = false;
                }
            });
        });
    }

    close(): Promise<void> {
        return this.lock.run(async () => {
            if (this.closed) return;
            this.closed = true;
            await this.persistence?.close();
        });
    }

    /** Runs `work` (a statement or a transaction's body); keeps what it did once written out, else undoes all of it. */
    private async atomically<R>(work: () => R | Promise<R>): Promise<R> {
        this.check();
        const mark = this.tables.mark();
        try {
            const result = await work();
            const changes = this.tables.takeChanges();
            if (this.persistence && changes.size > 0) await this.persistence.write(changes);
            this.tables.keep();
            return result;
        } catch (error) {
            this.tables.undoTo(mark);
            this.tables.takeChanges();
            this.tables.keep();
            throw error;
        }
    }

    /** One statement inside a transaction: undone alone when it throws (SQLite's statement atomicity). */
    private undoing<R>(work: () => R): R {
        this.check();
        const mark = this.tables.mark();
        try {
            return work();
        } catch (error) {
            this.tables.undoTo(mark);
            throw error;
        }
    }

    private statement(sql: string, params: readonly SqlValue[]): StatementOutcome {
        return runStatement(this.tables, sql, params);
    }

    /** Several statements without parameters (`exec`): the schema's texts are already there; others run in turn. */
    private execText(sql: string): void {
        if (schemaTexts.has(normalizeStatement(sql))) return;
        for (const statement of sql.split(";")) {
            if (statement.trim() !== "") runStatement(this.tables, statement);
        }
    }

    private check(): void {
        if (this.closed) throw new Error("the replica's database is closed");
    }
}

/** A replica in memory only: for tests, and for a page that keeps nothing between loads. */
export class MemoryDriver extends StatementDriver {
    constructor() {
        super(new ReplicaTables());
    }
}
