/// The collections one model declares, as the server uses them (protocol §12): what the routes, the engine and the
/// accounts service read instead of naming the family app's collections.
public struct CollectionRegistry: Sendable {
    public let model: DataModel
    /// Every collection, in the model file's order.
    public let writable: [CollectionSpec]
    /// The family-scoped singleton (the family app's `family`): signup creates it from the family's name, and a list
    /// answered in its endpoint changes it.
    public let familySingleton: CollectionSpec?
    /// The account-scoped singleton (the family app's `settings`): each account gets one, with its defaults.
    public let accountSingleton: CollectionSpec?
    /// Endpoints that answer singletons (and lists) together as §5 does, each with its collections in file order.
    public let bundles: [(endpoint: String, collections: [CollectionSpec])]
    /// Full lists with an endpoint of their own (protocol §3).
    public let lists: [CollectionSpec]
    /// Paginated lists (protocol §4).
    public let paginated: [CollectionSpec]
    /// The sync endpoints of the full lists and the bundles (`isSyncEndpoint`): asked for each call of every group.
    private let syncEndpoints: Set<String>

    public init(_ model: DataModel) {
        self.model = model
        let specs = model.specs
        writable = specs
        familySingleton = specs.first { $0.kind == .singleton(perAccount: false) }
        accountSingleton = specs.first { $0.kind == .singleton(perAccount: true) }
        var bundles: [(endpoint: String, collections: [CollectionSpec])] = []
        for collection in model.collections where collection.kind == .singleton {
            guard let endpoint = collection.sync, !bundles.contains(where: { $0.endpoint == endpoint }) else { continue }
            let members = model.collections.filter { $0.sync == endpoint }.compactMap { member in specs.first { $0.name == member.name } }
            bundles.append((endpoint, members))
        }
        self.bundles = bundles
        lists = specs.filter { $0.kind == .fullList }
        paginated = specs.filter { $0.kind == .paginated }
        syncEndpoints = Set(lists.compactMap(\.syncEndpoint) + bundles.map(\.endpoint))
    }

    /// The collection named `name`, if declared.
    public func named(_ name: String) -> CollectionSpec? { writable.first { $0.name == name } }

    /// Whether `endpoint` is the sync endpoint of a full list or of a bundle: the calls whose first delta a group
    /// reads ahead.
    public func isSyncEndpoint(_ endpoint: String) -> Bool {
        syncEndpoints.contains(endpoint)
    }

    /// The storage collections of an account's own items: its public profile and its singleton, if the model has one.
    public var accountItemCollections: [String] { [Collections.accountsKey] + (accountSingleton.map { [$0.name] } ?? []) }
}
