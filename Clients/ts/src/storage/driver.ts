/** A value a statement takes or a row holds. */
export type SqlValue = null | number | bigint | string | Uint8Array;

/** One row of a query, by column name. */
export type SqlRow = Record<string, SqlValue>;

/** What runs statements: the driver itself (each call on its own), or the handle of one transaction. */
export interface SqlExecutor {
    /** Runs one or more statements without parameters (the schema). */
    exec(sql: string): Promise<void>;
    /** Runs one statement and answers its rows. */
    query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
    /** Runs one statement and answers how many rows it changed. */
    run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
}

/**
 * The storage a replica lives in: an SQLite database (node:sqlite now; op-sqlite, expo-sqlite and an IndexedDB
 * emulation later), behind the smallest interface the client needs. Asynchronous, so that drivers whose engines are
 * (React Native's, the browser's) fit it.
 *
 * Contract: `transaction` runs `body` with a handle whose statements are one atomic transaction (all or nothing: a
 * thrown error rolls back); while it runs, every other call on the driver waits for it to end, so a transaction never
 * sees another caller's writes half-way and its own are never mixed with theirs. Statements outside a transaction are
 * each atomic on their own.
 */
export interface StorageDriver extends SqlExecutor {
    transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T>;
    close(): Promise<void>;
}
