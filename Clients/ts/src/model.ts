import { SyncClientError } from "./errors.js";
import { pathEscape } from "./http.js";
import { isObject, JsonObject, JsonValue } from "./json.js";

/** What a collection is (protocol §12). */
export type CollectionKind = "list" | "paginated" | "child" | "singleton";

/** One collection of the served model, as far as syncing it needs (the Swift SDK's `ServerModel.Collection`). */
export interface ModelCollection {
    name: string;
    kind: CollectionKind;
    /** The sync endpoint that answers it (none for a child, which travels inside its parent's answers). */
    sync?: string;
    /** A child's paginated collection. */
    parent?: string;
    /** A paginated collection's child collection. */
    children?: string;
    /** A paginated collection's order: `created`, or `lastChildCreated` sorted by `orderField`. */
    order?: string;
    orderField?: string;
    /** A singleton's (or an account-scoped list's) scope: `family` or `account`. */
    scope?: string;
    /** The server sets `author` and `created`. */
    authored: boolean;
    /** The app cannot write it (the account profiles). */
    readOnly: boolean;
    /** The field declarations as served (types, limits, defaults), for the app and for generated types later. */
    fields: JsonObject;
}

/** A sync endpoint and the shape of its answer: one list (§3), one paginated list (§4), or a bundle (§5). */
export interface SyncEndpoint {
    name: string;
    shape: "list" | "paginated" | "bundle";
    /** The collections its answer carries (a paginated list's children aside), by name. */
    members: ModelCollection[];
}

/** The field a paginated or child collection is sorted by (newest first, then id, descending); none for the others. */
export function sortField(collection: ModelCollection): string | undefined {
    switch (collection.kind) {
        case "paginated":
            return collection.order === "lastChildCreated" ? collection.orderField : "created";
        case "child":
            return "created";
        default:
            return undefined;
    }
}

/** The members the server sets and ignores when sent back (`id`, `modified`, `author`/`created`, the order field, children, `nomore`). */
export function serverSetFields(collection: ModelCollection): Set<string> {
    const fields = new Set(["id", "modified", "nomore"]);
    if (collection.authored || collection.kind === "child") {
        fields.add("author");
        fields.add("created");
    }
    if (collection.orderField) fields.add(collection.orderField);
    if (collection.children) fields.add(collection.children);
    return fields;
}

/** The child collection as the replica stores its items. */
export function childCollection(model: ServerModel, collection: ModelCollection): ModelCollection | undefined {
    if (!collection.children) return undefined;
    return (
        model.collections.get(collection.children) ?? {
            name: collection.children,
            kind: "child",
            parent: collection.name,
            authored: true,
            readOnly: false,
            fields: {},
        }
    );
}

/** The item's path under `/api/v1` (undefined for a read-only collection, and for a child without its parent). */
export function itemPath(collection: ModelCollection, id: string, parent?: string): string | undefined {
    if (collection.readOnly) return undefined;
    switch (collection.kind) {
        case "list":
        case "paginated":
            return `/${collection.name}/${pathEscape(id)}`;
        case "child":
            if (!collection.parent || parent === undefined) return undefined;
            return `/${collection.parent}/${pathEscape(parent)}/${collection.name}/${pathEscape(id)}`;
        case "singleton":
            return `/${collection.name}`;
    }
}

/**
 * The data model a server serves (`GET /api/v1/model`, protocol §12): every collection it declares, and the account
 * profiles (`accounts`, read-only) when the model has a family-scoped singleton, whose sync endpoint carries them.
 */
export class ServerModel {
    readonly collections: Map<string, ModelCollection>;

    constructor(
        readonly name: string,
        readonly digest: string,
        collections: ModelCollection[],
        /** The model's JSON as served. */
        readonly text: string
    ) {
        this.collections = new Map(collections.map((collection) => [collection.name, collection]));
        const family = collections.find((collection) => collection.kind === "singleton" && collection.scope === "family");
        if (family && !this.collections.has("accounts")) {
            const accounts: ModelCollection = { name: "accounts", kind: "list", authored: false, readOnly: true, fields: {} };
            if (family.sync !== undefined) accounts.sync = family.sync;
            this.collections.set("accounts", accounts);
        }
    }

    /** Reads the server's JSON (`{"model", "digest", "collections": {name: {kind, sync, …}}}`). */
    static parse(text: string): ServerModel {
        let json: JsonValue;
        try {
            json = JSON.parse(text) as JsonValue;
        } catch {
            throw SyncClientError.invalidAnswer("the model is not JSON");
        }
        if (!isObject(json) || typeof json.model !== "string" || typeof json.digest !== "string" || !isObject(json.collections)) {
            throw SyncClientError.invalidAnswer("the model needs model, digest and collections");
        }
        const collections: ModelCollection[] = [];
        for (const [name, entry] of Object.entries(json.collections)) {
            if (!isObject(entry)) throw SyncClientError.invalidAnswer(`the model's collection ${name} is not an object`);
            const kind = entry.kind;
            if (kind !== "list" && kind !== "paginated" && kind !== "child" && kind !== "singleton") {
                throw SyncClientError.invalidAnswer(`the model's collection ${name} has an unknown kind`);
            }
            const collection: ModelCollection = {
                name,
                kind,
                authored: entry.authored === true,
                readOnly: false,
                fields: isObject(entry.fields) ? entry.fields : {},
            };
            for (const key of ["sync", "parent", "children", "order", "orderField", "scope"] as const) {
                const value = entry[key];
                if (typeof value === "string") collection[key] = value;
            }
            collections.push(collection);
        }
        return new ServerModel(json.model, json.digest, collections, text);
    }

    /** The collection `name`, or the error an app gets for a name the server does not serve. */
    require(name: string): ModelCollection {
        const found = this.collections.get(name);
        if (!found) {
            const known = [...this.collections.keys()].sort().join(", ");
            throw SyncClientError.invalid(`${name} is not a collection of the model "${this.name}" (${known})`);
        }
        return found;
    }

    /** The sync endpoints, sorted by name, each with the collections its answer carries (sorted by name). */
    get endpoints(): SyncEndpoint[] {
        const members = new Map<string, ModelCollection[]>();
        for (const collection of this.collections.values()) {
            if (collection.sync === undefined) continue;
            const list = members.get(collection.sync) ?? [];
            list.push(collection);
            members.set(collection.sync, list);
        }
        return [...members.keys()].sort().map((name) => {
            const carried = members.get(name)!.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
            const only = carried.length === 1 ? carried[0]! : undefined;
            const shape = only?.kind === "list" ? "list" : only?.kind === "paginated" ? "paginated" : "bundle";
            return { name, shape, members: carried };
        });
    }
}
