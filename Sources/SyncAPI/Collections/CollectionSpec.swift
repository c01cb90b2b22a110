/// How a collection is synced (protocol §3–§5); the engine picks its delta logic from this alone.
public enum CollectionKind: Sendable, Equatable {
    /// The client holds every live item (`ctcsync`, `evtsync`, `plcsync`).
    case fullList
    /// The client holds the top of a sorted list (`msgsyncthread`, `wallsync`).
    case paginated
    /// Items under a parent item (messages of a thread), travelling inside the parent.
    case child(parent: String)
    /// One item per family or per account (`familysync`).
    case singleton
}

/// The one declaration of a collection: its name in paths and storage, kind, schema and sync endpoint.
///
/// Adding a type of data is adding one of these (plus its golden files), not new SQL or new handlers.
public struct CollectionSpec: Sendable {
    /// Name used in paths (`/contacts/{id}`) and as the storage key.
    public let name: String
    public let kind: CollectionKind
    public let schema: ItemSchema
    /// The delta-sync endpoint that serves this collection (e.g. `ctcsync`), if it has its own.
    public let syncEndpoint: String?

    public init(name: String, kind: CollectionKind, schema: ItemSchema, syncEndpoint: String?) {
        self.name = name
        self.kind = kind
        self.schema = schema
        self.syncEndpoint = syncEndpoint
    }
}
