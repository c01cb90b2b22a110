// Typed queries over the replica, with the types `syncapi model typescript` generates: filter, sort, limit, count and
// observe a collection's items by field name, checked by the compiler.
import type { SyncClient } from "./client.js";
import { canonicalText } from "./json.js";
import type { JsonObject, JsonValue } from "./json.js";

/** An item of any collection: what every generated type is. */
export interface ModelItem {
    id: string;
    [member: string]: unknown;
}

/** How a filter compares a field with its value (`contains`: a list field holds the value, or a text contains it). */
export type Comparison = "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains" | "in";

/** What a field may be compared with: a value of its type, an element of a list field (`contains`), a list of values (`in`). */
export type FilterValue<V> = V | (NonNullable<V> extends readonly (infer E)[] ? E : never) | readonly V[];

/** One filter: a field, a comparison, a value. */
interface Filter {
    field: string;
    op: Comparison;
    value: unknown;
}

/**
 * The client seen through a model's generated types (`typed<FamilyCollections>(client)`): reads, writes and queries
 * named by collection, each with its item type. It is the same client: local reads, writes queued and pushed.
 */
export class TypedClient<C extends { [K in keyof C]: ModelItem }> {
    constructor(readonly client: SyncClient) {}

    /** A query of `collection` (of the item `parent`'s children, for a child collection). */
    query<K extends keyof C & string>(collection: K, options: { parent?: string } = {}): Query<C[K]> {
        return new Query<C[K]>(this.client, collection, options.parent, [], [], undefined);
    }

    /** Every visible item of `collection`, as the replica holds it. */
    items<K extends keyof C & string>(collection: K, options: { parent?: string } = {}): Promise<C[K][]> {
        return this.query(collection, options).all();
    }

    /** One item, if the replica holds it. */
    async item<K extends keyof C & string>(collection: K, id: string, options: { parent?: string } = {}): Promise<C[K] | undefined> {
        return (await this.client.item(collection, id, options)) as C[K] | undefined;
    }

    /** Saves an item (a PUT, or a PATCH of the fields changed since the last sync), queued and pushed by itself. */
    save<K extends keyof C & string>(collection: K, item: C[K], options: { parent?: string } = {}): Promise<void> {
        return this.client.save(collection, item as unknown as JsonObject, options);
    }

    /** Deletes an item, queued and pushed by itself. */
    delete<K extends keyof C & string>(collection: K, id: string, options: { parent?: string } = {}): Promise<void> {
        return this.client.delete(collection, id, options);
    }
}

/** The client through the item types of a generated model: `typed<FamilyCollections>(client)`. */
export function typed<C extends { [K in keyof C]: ModelItem }>(client: SyncClient): TypedClient<C> {
    return new TypedClient<C>(client);
}

/**
 * A query of one collection's items in the replica: immutable (each method answers a new query), run by `all`,
 * `first`, `count` or `observe`. Comparisons follow JSON: numbers as numbers, strings (RFC 3339 dates among them) by
 * code point, a missing field or `null` below every value when sorting and equal to nothing but `null`.
 */
export class Query<T extends ModelItem> {
    constructor(
        private readonly client: SyncClient,
        private readonly collection: string,
        private readonly parent: string | undefined,
        private readonly filters: readonly Filter[],
        private readonly order: readonly { field: string; descending: boolean }[],
        private readonly max: number | undefined
    ) {}

    /** Only the items whose `field` compares with `value` as `op` says. */
    where<F extends keyof T & string>(field: F, op: Comparison, value: FilterValue<T[F]>): Query<T> {
        return new Query<T>(this.client, this.collection, this.parent, [...this.filters, { field, op, value }], this.order, this.max);
    }

    /** Sorted by `field` (after the sorts already given), ascending by default. */
    orderBy<F extends keyof T & string>(field: F, direction: "asc" | "desc" = "asc"): Query<T> {
        return new Query<T>(this.client, this.collection, this.parent, this.filters, [...this.order, { field, descending: direction === "desc" }], this.max);
    }

    /** At most `count` items. */
    limit(count: number): Query<T> {
        return new Query<T>(this.client, this.collection, this.parent, this.filters, this.order, Math.max(0, Math.floor(count)));
    }

    /** The items, filtered, sorted and limited. */
    async all(): Promise<T[]> {
        return this.apply(await this.client.items(this.collection, this.options()));
    }

    /** The first item, if any. */
    async first(): Promise<T | undefined> {
        return (await this.limit(1).all())[0];
    }

    /** How many items match (the limit applies). */
    async count(): Promise<number> {
        return (await this.all()).length;
    }

    /**
     * Calls `listener` with the query's items now, then each time a sync or a local write changes them, and only then
     * (never twice the same items in a row, even when other items of the collection changed); answers the function
     * that stops it.
     */
    observe(listener: (items: T[]) => void, options: { onError?: (error: unknown) => void } = {}): () => void {
        let last: string | undefined;
        return this.client.observeItems(
            this.collection,
            (items) => {
                const rows = this.apply(items);
                const text = canonicalText(rows as unknown as JsonValue);
                if (text === last) return;
                last = text;
                listener(rows);
            },
            { ...this.options(), ...(options.onError ? { onError: options.onError } : {}) }
        );
    }

    private options(): { parent?: string } {
        return this.parent === undefined ? {} : { parent: this.parent };
    }

    private apply(items: JsonObject[]): T[] {
        let rows = items.filter((item) => this.filters.every((filter) => matches(item[filter.field], filter.op, filter.value)));
        if (this.order.length > 0) {
            rows = [...rows].sort((a, b) => {
                for (const { field, descending } of this.order) {
                    const order = compare(a[field], b[field]);
                    if (order !== 0) return descending ? -order : order;
                }
                return 0;
            });
        }
        if (this.max !== undefined) rows = rows.slice(0, this.max);
        return rows as unknown as T[];
    }
}

/** JSON order: missing and `null` first, then booleans, numbers, strings (by code point), then anything else as text. */
export function compare(a: unknown, b: unknown): number {
    const rank = (value: unknown): number =>
        value === undefined || value === null ? 0 : typeof value === "boolean" ? 1 : typeof value === "number" ? 2 : typeof value === "string" ? 3 : 4;
    const [ra, rb] = [rank(a), rank(b)];
    if (ra !== rb) return ra - rb;
    if (ra === 0) return 0;
    if (ra === 1 || ra === 2) return Number(a) - Number(b);
    const [sa, sb] = ra === 3 ? [a as string, b as string] : [canonicalText(a as JsonValue), canonicalText(b as JsonValue)];
    return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function matches(field: unknown, op: Comparison, value: unknown): boolean {
    const absent = field === undefined || field === null;
    switch (op) {
        case "==":
            return absent ? value === null || value === undefined : compare(field, value) === 0 && (typeof field !== "object" || canonicalText(field as JsonValue) === canonicalText(value as JsonValue));
        case "!=":
            return !matches(field, "==", value);
        case "<":
            return !absent && compare(field, value) < 0;
        case "<=":
            return !absent && compare(field, value) <= 0;
        case ">":
            return !absent && compare(field, value) > 0;
        case ">=":
            return !absent && compare(field, value) >= 0;
        case "contains":
            if (Array.isArray(field)) return field.some((element) => compare(element, value) === 0);
            return typeof field === "string" && typeof value === "string" && field.includes(value);
        case "in":
            return Array.isArray(value) && value.some((element) => matches(field, "==", element));
    }
}
