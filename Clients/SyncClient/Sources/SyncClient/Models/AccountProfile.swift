/// The public profile of a login of the family (`accounts` in `familysync`): read-only, never secrets.
public struct AccountProfile: SyncModel, Equatable {
    public static let collectionName = "accounts"
    public var id: String
    public var username: String
    public var displayName: String
    public var modified: String?

    public init(id: String, username: String, displayName: String) {
        self.id = id
        self.username = username
        self.displayName = displayName
    }
}
