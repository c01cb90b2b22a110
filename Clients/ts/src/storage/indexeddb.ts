import { ReplicaTables, TableChanges, TableRow } from "./replica-tables.js";
import { StatementDriver, TablePersistence } from "./statement-driver.js";

/** Options of `IndexedDbDriver.open`. */
export interface IndexedDbOptions {
    /** The IndexedDB to use (default `globalThis.indexedDB`). */
    indexedDB?: IDBFactory;
    /**
     * `strict` (default): a write resolves once the browser has flushed it to disk, so a queued write survives a crash
     * of the browser; `relaxed`: once the write is in the operating system's hands (faster, survives a tab's close).
     */
    durability?: "strict" | "relaxed";
    /**
     * Refuse to open a replica another tab holds (default true, through Web Locks where the browser has them): each
     * page keeps the replica's rows in memory, so two pages writing one replica would overwrite each other.
     */
    exclusive?: boolean;
}

/** The version of the object stores' layout (the stores are the replica's tables of `schema.ts`). */
const layoutVersion = 1;

/**
 * Items are stored in this many buckets (one IndexedDB record each, by a hash of the item's key), not one record per
 * item: a browser writes a few thousand records of some kilobytes far faster than 100,000 small ones (each `put` is a
 * structured clone and a message to the storage process), and a change rewrites one bucket of a few kilobytes.
 * A bucket's rows are one JSON text: one string clones far faster than a few dozen small objects, both ways.
 */
const itemBuckets = 4096;

/** The bucket of an item's key text (FNV-1a). */
function bucketOf(key: string): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) {
        hash ^= key.charCodeAt(i);
        hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % itemBuckets;
}

/** The items of each bucket, as written to IndexedDB (kept to rewrite a bucket without reading it back). */
type Buckets = Map<number, Map<string, TableRow>>;

/**
 * The replica in a browser: the replica's tables kept in memory (`StatementDriver`, which carries out the client's SQL
 * statements itself: no SQLite engine ships with this package, see docs/decisions.md) and every committed change
 * written to IndexedDB (a store per table; items in hashed buckets of a few kilobytes), one IndexedDB transaction
 * per driver call or transaction, before the call resolves. A page
 * reloaded offline opens the replica and its queue as they were. Open it with `await IndexedDbDriver.open("replica")`.
 */
export class IndexedDbDriver extends StatementDriver {
    private constructor(tables: ReplicaTables, persistence: IndexedDbPersistence) {
        super(tables, persistence);
    }

    /** Opens (creating when missing) the replica of the IndexedDB database `name`, and loads its rows. */
    static async open(name: string, options: IndexedDbOptions = {}): Promise<IndexedDbDriver> {
        const factory = options.indexedDB ?? globalThis.indexedDB;
        if (!factory) throw new Error("IndexedDB is not available here");
        const release = options.exclusive === false ? undefined : await holdLock(`syncapi-replica:${name}`);
        try {
            const tables = new ReplicaTables();
            const db = await openDatabase(factory, name, tables);
            const buckets = await load(db, tables);
            return new IndexedDbDriver(tables, new IndexedDbPersistence(db, buckets, options.durability ?? "strict", release));
        } catch (error) {
            release?.();
            throw error;
        }
    }

    /** Deletes the replica's IndexedDB database (closed first). */
    static delete(name: string, factory: IDBFactory = globalThis.indexedDB): Promise<void> {
        return request(factory.deleteDatabase(name)).then(() => undefined);
    }
}

/** Writes the tables' changes to the IndexedDB database: one readwrite transaction each time, awaited to its end. */
class IndexedDbPersistence implements TablePersistence {
    constructor(
        private readonly db: IDBDatabase,
        private readonly buckets: Buckets,
        private readonly durability: "strict" | "relaxed",
        private readonly release: (() => void) | undefined
    ) {}

    write(changes: TableChanges): Promise<void> {
        // The changed buckets, rebuilt on copies: kept only once IndexedDB has committed them.
        const rebuilt: Buckets = new Map();
        for (const [key, change] of changes.get("items") ?? []) {
            const bucket = bucketOf(key);
            let rows = rebuilt.get(bucket);
            if (!rows) rebuilt.set(bucket, (rows = new Map(this.buckets.get(bucket))));
            if (change.row) rows.set(key, change.row);
            else rows.delete(key);
        }
        return new Promise((resolve, reject) => {
            const transaction = this.db.transaction([...changes.keys()], "readwrite", { durability: this.durability });
            transaction.oncomplete = () => {
                for (const [bucket, rows] of rebuilt) {
                    if (rows.size === 0) this.buckets.delete(bucket);
                    else this.buckets.set(bucket, rows);
                }
                resolve();
            };
            transaction.onerror = () => reject(transaction.error ?? new Error("an IndexedDB write failed"));
            transaction.onabort = () => reject(transaction.error ?? new Error("an IndexedDB write was aborted"));
            for (const [name, rows] of changes) {
                const store = transaction.objectStore(name);
                if (name === "items") {
                    for (const [bucket, items] of rebuilt) {
                        if (items.size === 0) store.delete(bucket);
                        else store.put({ bucket, rows: JSON.stringify([...items.values()]) });
                    }
                    continue;
                }
                for (const change of rows.values()) {
                    if (change.row) store.put(change.row);
                    else store.delete((change.key.length === 1 ? change.key[0] : change.key) as IDBValidKey);
                }
            }
        });
    }

    async close(): Promise<void> {
        this.db.close();
        this.release?.();
    }
}

function request<T>(req: IDBRequest<T>): Promise<T> {
    return new Promise((resolve, reject) => {
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error("an IndexedDB request failed"));
    });
}

function openDatabase(factory: IDBFactory, name: string, tables: ReplicaTables): Promise<IDBDatabase> {
    return new Promise((resolve, reject) => {
        const req = factory.open(name, layoutVersion);
        req.onupgradeneeded = () => {
            const db = req.result;
            for (const store of tables.stores) {
                if (db.objectStoreNames.contains(store.name)) continue;
                const keyPath = store === tables.items ? "bucket" : store.keyPath.length === 1 ? store.keyPath[0]! : [...store.keyPath];
                db.createObjectStore(store.name, { keyPath });
            }
        };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error(`IndexedDB could not open ${name}`));
        req.onblocked = () => reject(new Error(`IndexedDB ${name} is held open by another page at an older layout`));
    });
}

/** Reads every row of every store into the tables (one read-only transaction); answers the items' buckets. */
async function load(db: IDBDatabase, tables: ReplicaTables): Promise<Buckets> {
    const transaction = db.transaction(tables.stores.map((store) => store.name), "readonly");
    const buckets: Buckets = new Map();
    await Promise.all(
        tables.stores.map(async (store) => {
            const records = await request(transaction.objectStore(store.name).getAll());
            if (store !== tables.items) {
                for (const row of records) store.load(row as TableRow);
                return;
            }
            for (const record of records as { bucket: number; rows: string | TableRow[] }[]) {
                const rows = new Map<string, TableRow>();
                // Buckets written before their rows were one text (commits 31f3f55 to cddc2ad) are arrays.
                for (const row of typeof record.rows === "string" ? (JSON.parse(record.rows) as TableRow[]) : record.rows) {
                    store.load(row);
                    rows.set(store.keyOf(row), row);
                }
                buckets.set(record.bucket, rows);
            }
        })
    );
    return buckets;
}

/** Takes the Web Lock `name` for as long as the replica is open; refused at once when another page holds it. */
async function holdLock(name: string): Promise<(() => void) | undefined> {
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    if (!locks) return undefined;
    return new Promise((resolve, reject) => {
        void locks
            .request(name, { ifAvailable: true }, (lock) => {
                if (!lock) {
                    reject(new Error(`the replica ${name} is open in another page`));
                    return undefined;
                }
                return new Promise<void>((release) => resolve(release));
            })
            .catch(reject);
    });
}
