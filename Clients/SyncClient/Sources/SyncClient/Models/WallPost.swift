/// A post of the family wall (`/wall`, a paginated list synced by `wallsync`, newest first).
public struct WallPost: SyncModel, Equatable {
    /// The kinds of post (`type` is immutable once created).
    public enum Kind: String, Codable, Sendable { case text, photo, event, link }

    public static let collection = SyncCollection.wall
    public var id: String
    public var type: Kind
    public var text: String?
    public var mediaUrl: String?
    public var author: String?
    public var created: String?
    public var modified: String?

    public init(id: String, type: Kind, text: String? = nil, mediaUrl: String? = nil) {
        self.id = id
        self.type = type
        self.text = text
        self.mediaUrl = mediaUrl
    }
}
