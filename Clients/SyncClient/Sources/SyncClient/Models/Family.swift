/// The family itself (`/family`, a singleton synced by `familysync`): the tenant every item belongs to.
public struct Family: SyncModel, Equatable {
    public static let collection = SyncCollection.family
    public var id: String
    public var name: String
    public var pictureUrl: String?
    public var modified: String?

    public init(id: String, name: String, pictureUrl: String? = nil) {
        self.id = id
        self.name = name
        self.pictureUrl = pictureUrl
    }
}
