/// The data model a server serves (protocol §12, `GET /api/v1/model`), as far as the SDK needs it to sync: each
/// collection's kind, sync endpoint, parent or children and order. The SDK syncs whatever collections it names, so one
/// SDK serves every app's model; an app's generated types carry its model too (`ServerModel.family`), which the SDK
/// uses only until it has read the server's.
public struct ServerModel: Sendable, Equatable, Decodable {
    /// One collection of the model.
    public struct Collection: Sendable, Equatable {
        /// What a collection is (protocol §12): a `list` the client holds whole, a `paginated` list it holds the top
        /// of, the `child` items of a paginated list's items, or a `singleton` of the family or of the account.
        public enum Kind: String, Sendable, Codable { case list, paginated, child, singleton }

        public var name: SyncCollection
        public var kind: Kind
        /// The sync endpoint that answers it (nil for a child, which travels inside its parent's answers).
        public var sync: String?
        /// A child's paginated collection.
        public var parent: SyncCollection?
        /// A paginated collection's child collection.
        public var children: SyncCollection?
        /// A paginated collection's order: `created`, or `lastChildCreated` sorted by `orderField`.
        public var order: String?
        public var orderField: String?
        /// A singleton's scope: `family` or `account`.
        public var scope: String?
        /// The server sets `author` and `created`.
        public var authored: Bool
        /// The app cannot write it (the account profiles).
        public var isReadOnly: Bool

        public init(
            name: SyncCollection, kind: Kind, sync: String? = nil, parent: SyncCollection? = nil, children: SyncCollection? = nil,
            order: String? = nil, orderField: String? = nil, scope: String? = nil, authored: Bool = false, isReadOnly: Bool = false
        ) {
            self.name = name
            self.kind = kind
            self.sync = sync
            self.parent = parent
            self.children = children
            self.order = order
            self.orderField = orderField
            self.scope = scope
            self.authored = authored
            self.isReadOnly = isReadOnly
        }

        /// The field the server sorts a paginated or child list by (newest first, then by id, descending); nil for
        /// the others, which the SDK orders by id.
        public var sortField: String? {
            switch kind {
            case .paginated: order == "lastChildCreated" ? orderField : "created"
            case .child: "created"
            case .list, .singleton: nil
            }
        }

        /// The child collection, as the replica stores its items.
        var childCollection: Collection? {
            children.map { Collection(name: $0, kind: .child, parent: name, authored: true) }
        }

        /// The item's path under `/api/v1` (nil for a read-only collection and for a child without its parent).
        func path(id: String, parent parentID: String?) -> String? {
            guard !isReadOnly else { return nil }
            switch kind {
            case .list, .paginated: return "/\(name)/\(SyncCollection.escape(id))"
            case .child:
                guard let parent, let parentID else { return nil }
                return "/\(parent)/\(SyncCollection.escape(parentID))/\(name)/\(SyncCollection.escape(id))"
            case .singleton: return "/\(name)"
            }
        }
    }

    /// The model's name (`family`, `recipes`).
    public var name: String
    /// The SHA-256 of the normalized model (`modelDigest` of `GET /api/v1/`).
    public var digest: String
    /// Every collection, the account profiles included when the model has a family-scoped singleton.
    public private(set) var collections: [SyncCollection: Collection]

    public init(name: String, digest: String, collections: [Collection]) {
        self.name = name
        self.digest = digest
        var byName: [SyncCollection: Collection] = [:]
        for collection in collections { byName[collection.name] = collection }
        if let family = collections.first(where: { $0.kind == .singleton && $0.scope == "family" }), byName[.accounts] == nil {
            byName[.accounts] = Collection(name: .accounts, kind: .list, sync: family.sync, isReadOnly: true)
        }
        self.collections = byName
    }

    public subscript(_ collection: SyncCollection) -> Collection? { collections[collection] }

    /// The collection `collection`, or the error an app gets for a name the server does not serve.
    func require(_ collection: SyncCollection) throws -> Collection {
        guard let found = collections[collection] else {
            throw SyncClientError.invalid(
                "\(collection) is not a collection of the model \"\(name)\" (\(collections.keys.sorted().map(\.rawValue).joined(separator: ", ")))")
        }
        return found
    }

    /// The sync endpoints, by name: each with the collections its answer carries.
    public var endpoints: [SyncEndpoint] {
        var members: [String: [Collection]] = [:]
        for collection in collections.values {
            if let sync = collection.sync { members[sync, default: []].append(collection) }
        }
        return members.keys.sorted().map { name in
            let carried = members[name]!.sorted { $0.name < $1.name }
            if carried.count == 1, carried[0].kind == .list { return SyncEndpoint(name: name, shape: .list(carried[0])) }
            if carried.count == 1, carried[0].kind == .paginated { return SyncEndpoint(name: name, shape: .paginated(carried[0])) }
            return SyncEndpoint(name: name, shape: .bundle(carried))
        }
    }

    // The server's JSON form: {"model", "digest", "collections": {"name": {"kind", "sync", …, "fields"}}}.
    private struct Wire: Decodable {
        struct Entry: Decodable {
            var kind: Collection.Kind
            var sync: String?
            var parent: String?
            var children: String?
            var order: String?
            var orderField: String?
            var scope: String?
            var authored: Bool?
        }

        var model: String
        var digest: String
        var collections: [String: Entry]
    }

    public init(from decoder: any Decoder) throws {
        let wire = try Wire(from: decoder)
        var collections: [Collection] = []
        for (name, entry) in wire.collections {
            collections.append(
                Collection(
                    name: SyncCollection(name), kind: entry.kind, sync: entry.sync, parent: entry.parent.map { SyncCollection($0) },
                    children: entry.children.map { SyncCollection($0) }, order: entry.order, orderField: entry.orderField,
                    scope: entry.scope, authored: entry.authored ?? false))
        }
        self.init(name: wire.model, digest: wire.digest, collections: collections)
    }
}

/// A sync endpoint of the model and what its answer looks like (protocol §12): one list (§3), one paginated list with
/// its children (§4), or a bundle of singletons and lists (§5).
public struct SyncEndpoint: Sendable {
    /// What the answer looks like.
    public enum Shape: Sendable {
        case list(ServerModel.Collection)
        case paginated(ServerModel.Collection)
        case bundle([ServerModel.Collection])
    }

    /// Its path under `/api/v1` (`ctcsync`).
    public var name: String
    public var shape: Shape

    /// The collections the answer carries (a paginated list's children aside).
    public var members: [ServerModel.Collection] {
        switch shape {
        case .list(let collection), .paginated(let collection): [collection]
        case .bundle(let collections): collections
        }
    }
}
