import { JsonObject, parseObject } from "./json.js";
import { visibleTexts } from "./replica.js";
import { SqlExecutor, SqlRow, SqlValue, StorageDriver } from "./storage/driver.js";

/**
 * The app's storage driver, seen through a wrapper that tells when a write ended (a statement outside a
 * transaction, or a transaction that committed). It exists because a storage driver has no change notification of its
 * own: observers of the replica wake on these, then read the collection's stamp (one row, kept by the schema's
 * triggers) to learn whether their collection moved.
 */
export class ChangeWatchingDriver implements StorageDriver {
    private readonly listeners = new Set<() => Promise<void>>();

    constructor(readonly inner: StorageDriver) {}

    /** Calls `listener` after each write, which waits for it (so that what it updates is current when the write returns); answers the function that stops it. */
    onChange(listener: () => Promise<void>): () => void {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
    }

    private async changed(): Promise<void> {
        for (const listener of [...this.listeners]) {
            // A listener never breaks a write.
            await listener().catch(() => undefined);
        }
    }

    async exec(sql: string): Promise<void> {
        await this.inner.exec(sql);
        await this.changed();
    }

    query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
        return this.inner.query(sql, params);
    }

    async run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
        const result = await this.inner.run(sql, params);
        if (result.changes > 0) await this.changed();
        return result;
    }

    async transaction<T>(body: (tx: SqlExecutor) => Promise<T>): Promise<T> {
        const result = await this.inner.transaction(body);
        await this.changed();
        return result;
    }

    close(): Promise<void> {
        return this.inner.close();
    }
}

/** Where an observation stands: the stamp and the items last read. */
interface Observation {
    collection: string;
    parent: string | undefined;
    sorted: () => boolean | undefined;
    listener: (items: JsonObject[]) => void;
    onError: ((error: unknown) => void) | undefined;
    stamp: number | undefined;
    texts: string[] | undefined;
}

/**
 * The observations of one client's replica (`observeItems`): each listener hears its collection's visible items at
 * once, then again after each sync or local write that changed them, and never twice the same items in a row. A write
 * to other collections costs each observation a one-row read (its stamp). It exists so that a screen redraws when, and
 * only when, what it shows changed.
 */
export class Observers {
    private readonly observations = new Set<Observation>();
    private checking: Promise<void> | undefined;
    private again = false;

    constructor(private readonly db: ChangeWatchingDriver, private readonly afterWrite: () => Promise<void>) {
        db.onChange(() => this.wake());
    }

    /** Follows a collection (of `parent`, for a child collection); answers the function that stops it. */
    observe(
        collection: string,
        parent: string | undefined,
        sorted: () => boolean | undefined,
        listener: (items: JsonObject[]) => void,
        onError?: (error: unknown) => void
    ): () => void {
        const observation: Observation = { collection, parent, sorted, listener, onError, stamp: undefined, texts: undefined };
        this.observations.add(observation);
        void this.wake();
        return () => this.observations.delete(observation);
    }

    /** A write ended: every observation checks its stamp (one pass at a time; writes during a pass make one more). Resolves when the passes end. */
    wake(): Promise<void> {
        if (this.checking) {
            this.again = true;
            return this.checking;
        }
        this.checking = (async () => {
            do {
                this.again = false;
                await this.afterWrite().catch(() => undefined);
                for (const observation of [...this.observations]) {
                    await this.check(observation).catch((error: unknown) => observation.onError?.(error));
                }
            } while (this.again);
        })().finally(() => {
            this.checking = undefined;
        });
        return this.checking;
    }

    /** Waits for the checks that run (tests, and `close`). */
    async settled(): Promise<void> {
        while (this.checking) await this.checking;
    }

    private async check(observation: Observation): Promise<void> {
        const rows = await this.db.query("SELECT n FROM stamps WHERE collection = ?", [observation.collection]);
        const stamp = Number(rows[0]?.n ?? 0);
        if (stamp === observation.stamp && observation.texts !== undefined) return;
        observation.stamp = stamp;
        const texts = await visibleTexts(this.db, observation.collection, observation.parent, observation.sorted());
        if (!this.observations.has(observation)) return;
        const previous = observation.texts;
        if (previous !== undefined && previous.length === texts.length && previous.every((text, index) => text === texts[index])) return;
        observation.texts = texts;
        try {
            observation.listener(texts.map(parseObject).filter((item): item is JsonObject => item !== null));
        } catch {
            // A listener never breaks the others.
        }
    }
}
