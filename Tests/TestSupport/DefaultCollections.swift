import SyncAPI

/// The default model's collections by name, for the tests (the server's sources name none of them: they read the
/// model's registry).
extension Collections {
    static func declared(_ name: String) -> CollectionSpec {
        guard let spec = named(name) else { fatalError("the default model has no collection \(name)") }
        return spec
    }

    public static let contacts = declared("contacts")
    public static let events = declared("events")
    public static let places = declared("places")
    public static let threads = declared("threads")
    public static let messages = declared("messages")
    public static let wall = declared("wall")
    public static let comments = declared("comments")
    public static let family = declared("family")
    public static let members = declared("members")
    public static let settings = declared("settings")
}

extension SyncStore {
    /// A family of the default model: its family-scoped singleton holds `familyBody`.
    public func createFamily(id: String, name: String, familyBody: String, account: NewAccount, nowMs: Int64) async throws {
        let singleton = Collections.registry.familySingleton?.name ?? Collections.accountsKey
        try await createFamily(
            id: id, name: name, familyItem: RowWrite(key: ItemKey(collection: singleton, id: id), body: familyBody), account: account,
            nowMs: nowMs)
    }
}
