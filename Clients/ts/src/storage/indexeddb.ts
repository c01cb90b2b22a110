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
 * The replica in a browser: the replica's tables kept in memory (`StatementDriver`, which carries out the client's SQL
 * statements itself: no SQLite engine ships with this package, see docs/decisions.md) and every committed change
 * written to IndexedDB, one IndexedDB transaction per driver call or transaction, before the call resolves. A page
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
            await load(db, tables);
            return new IndexedDbDriver(tables, new IndexedDbPersistence(db, options.durability ?? "strict", release));
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
        private readonly durability: "strict" | "relaxed",
        private readonly release: (() => void) | undefined
    ) {}

    write(changes: TableChanges): Promise<void> {
        return new Promise((resolve, reject) => {
            const transaction = this.db.transaction([...changes.keys()], "readwrite", { durability: this.durability });
            transaction.oncomplete = () => resolve();
            transaction.onerror = () => reject(transaction.error ?? new Error("an IndexedDB write failed"));
            transaction.onabort = () => reject(transaction.error ?? new Error("an IndexedDB write was aborted"));
            for (const [name, rows] of changes) {
                const store = transaction.objectStore(name);
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
                db.createObjectStore(store.name, { keyPath: store.keyPath.length === 1 ? store.keyPath[0]! : [...store.keyPath] });
            }
        };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error ?? new Error(`IndexedDB could not open ${name}`));
        req.onblocked = () => reject(new Error(`IndexedDB ${name} is held open by another page at an older layout`));
    });
}

/** Reads every row of every store into the tables (one read-only transaction). */
async function load(db: IDBDatabase, tables: ReplicaTables): Promise<void> {
    const transaction = db.transaction(tables.stores.map((store) => store.name), "readonly");
    await Promise.all(
        tables.stores.map(async (store) => {
            for (const row of await request(transaction.objectStore(store.name).getAll())) store.load(row as TableRow);
        })
    );
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
