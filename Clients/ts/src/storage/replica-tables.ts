import { SqlValue } from "./driver.js";

// The replica's tables held in memory, for drivers without an SQL engine (IndexedDB). Every change goes through
// `Store.set`/`Store.remove`, which keep an undo journal (a failed statement or transaction is undone) and the set of
// rows changed since the last `takeChanges` (what a persistent driver writes out).

/** A row of any table of the replica: column name to value, as SQLite would answer it. */
export type TableRow = Record<string, SqlValue>;

/** A row written, or deleted (`row` null), with the values of its primary key in the key path's order. */
export interface RowChange {
    key: SqlValue[];
    row: TableRow | null;
}

/** The rows written or deleted since the last `takeChanges`, by store then by the row's key text. */
export type TableChanges = Map<string, Map<string, RowChange>>;

/** One table: rows by the text of their primary key, and the column(s) that key is made of. */
export class Store {
    readonly rows = new Map<string, TableRow>();
    /** Extra bookkeeping of a table (its secondary indexes): called with a row added or removed. */
    onChange: ((row: TableRow, added: boolean) => void) | undefined;

    constructor(
        readonly name: string,
        readonly keyPath: readonly string[],
        private readonly owner: ReplicaTables
    ) {}

    keyOf(row: TableRow): string {
        return this.keyPath.length === 1 ? String(row[this.keyPath[0]!]) : this.keyPath.map((column) => String(row[column])).join("\u0001");
    }

    keyValues(row: TableRow): SqlValue[] {
        return this.keyPath.map((column) => row[column] ?? null);
    }

    get(key: string): TableRow | undefined {
        return this.rows.get(key);
    }

    /** Writes `row` (a new object: rows are never mutated in place, so the journal can put the old one back). */
    set(row: TableRow): void {
        const key = this.keyOf(row);
        const old = this.rows.get(key);
        this.owner.record(() => this.restore(key, old));
        this.place(key, old, row);
        this.owner.changed(this.name, key, { key: this.keyValues(row), row });
    }

    remove(key: string): TableRow | undefined {
        const old = this.rows.get(key);
        if (old === undefined) return undefined;
        this.owner.record(() => this.restore(key, old));
        this.place(key, old, undefined);
        this.owner.changed(this.name, key, { key: this.keyValues(old), row: null });
        return old;
    }

    /** Loads a stored row without journal or change (opening a persisted replica). */
    load(row: TableRow): void {
        this.place(this.keyOf(row), undefined, row);
    }

    private restore(key: string, old: TableRow | undefined): void {
        const current = this.rows.get(key);
        this.place(key, current, old);
        const any = old ?? current;
        if (any) this.owner.changed(this.name, key, { key: this.keyValues(any), row: old ?? null });
    }

    private place(key: string, old: TableRow | undefined, row: TableRow | undefined): void {
        if (old !== undefined) this.onChange?.(old, false);
        if (row === undefined) this.rows.delete(key);
        else {
            this.rows.set(key, row);
            this.onChange?.(row, true);
        }
    }
}

/** The tables of the schema (`schema.ts`), with the indexes the replica's statements read by. */
export class ReplicaTables {
    private journal: (() => void)[] = [];
    private changes: TableChanges = new Map();

    readonly items = this.store("items", ["collection", "parent", "id"]);
    readonly meta = this.store("meta", ["key"]);
    readonly queue = this.store("queue", ["seq"]);
    readonly failed = this.store("failed", ["seq"]);
    readonly uploads = this.store("uploads", ["seq"]);
    readonly conflicts = this.store("conflicts", ["seq"]);
    readonly heldCounts = this.store("heldCounts", ["collection"]);
    readonly stamps = this.store("stamps", ["collection"]);
    readonly stampsBulk = this.store("stampsBulk", ["collection"]);
    readonly migrations = this.store("grdb_migrations", ["identifier"]);
    /** SQLite's `sqlite_sequence`: the largest `seq` an AUTOINCREMENT table ever gave, so a seq is never given twice. */
    readonly sequences = this.store("sqlite_sequence", ["name"]);

    /** Items by collection, then parent, then id (the statements read a list, or one parent's children). */
    readonly itemsByList = new Map<string, Map<string, Map<string, TableRow>>>();
    /** Queue entries by their item (`UNIQUE (collection, parent, id)`). */
    readonly queueByItem = new Map<string, TableRow>();
    /** Uploads by `sha256` (`UNIQUE`). */
    readonly uploadsBySha = new Map<string, TableRow>();

    constructor() {
        this.items.onChange = (row, added) => {
            const collection = String(row.collection);
            const parent = String(row.parent);
            let parents = this.itemsByList.get(collection);
            if (added) {
                if (!parents) this.itemsByList.set(collection, (parents = new Map()));
                let ids = parents.get(parent);
                if (!ids) parents.set(parent, (ids = new Map()));
                ids.set(String(row.id), row);
            } else {
                const ids = parents?.get(parent);
                ids?.delete(String(row.id));
                if (ids?.size === 0) parents!.delete(parent);
                if (parents?.size === 0) this.itemsByList.delete(collection);
            }
        };
        this.queue.onChange = (row, added) => {
            const key = itemKey(row.collection, row.parent, row.id);
            if (added) this.queueByItem.set(key, row);
            else if (this.queueByItem.get(key) === row) this.queueByItem.delete(key);
        };
        this.uploads.onChange = (row, added) => {
            if (added) this.uploadsBySha.set(String(row.sha256), row);
            else if (this.uploadsBySha.get(String(row.sha256)) === row) this.uploadsBySha.delete(String(row.sha256));
        };
    }

    /** Every store, for a persistent driver's schema and loading. */
    get stores(): Store[] {
        return [this.items, this.meta, this.queue, this.failed, this.uploads, this.conflicts, this.heldCounts, this.stamps, this.stampsBulk, this.migrations, this.sequences];
    }

    /** The next `seq` of an AUTOINCREMENT table. */
    nextSeq(table: string): number {
        const seq = Number(this.sequences.get(table)?.seq ?? 0) + 1;
        this.sequences.set({ name: table, seq });
        return seq;
    }

    record(undo: () => void): void {
        this.journal.push(undo);
    }

    changed(store: string, key: string, change: RowChange): void {
        let rows = this.changes.get(store);
        if (!rows) this.changes.set(store, (rows = new Map()));
        rows.set(key, change);
    }

    /** A point to undo back to (the start of a statement or of a transaction). */
    mark(): number {
        return this.journal.length;
    }

    /** Undoes every change made since `mark`. */
    undoTo(mark: number): void {
        while (this.journal.length > mark) this.journal.pop()!();
    }

    /** The rows changed since the last call (what a persistent driver writes out); the journal stays until `keep`. */
    takeChanges(): TableChanges {
        const changes = this.changes;
        this.changes = new Map();
        return changes;
    }

    /** The work since the last `keep` stays: the journal is forgotten. */
    keep(): void {
        this.journal = [];
    }

    private store(name: string, keyPath: string[]): Store {
        return new Store(name, keyPath, this);
    }
}

/** The key text of an item (or of its queue entry). */
export function itemKey(collection: SqlValue | undefined, parent: SqlValue | undefined, id: SqlValue | undefined): string {
    return `${String(collection)}\u0001${String(parent)}\u0001${String(id)}`;
}
