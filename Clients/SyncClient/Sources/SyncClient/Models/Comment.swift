/// A comment on a wall post (`/wall/{postId}/comments`, newest first); it travels inside its post in syncs.
public struct Comment: SyncModel, Equatable {
    public static let collection = SyncCollection.comments
    public var id: String
    /// The post it belongs to (not a field of the server's JSON: the replica knows it from the path).
    public var postID: String
    public var text: String
    public var author: String?
    public var created: String?
    public var modified: String?
    public var parentID: String? { postID }

    public init(id: String, postID: String, text: String) {
        self.id = id
        self.postID = postID
        self.text = text
    }

    enum CodingKeys: String, CodingKey { case id, postID = "_parent", text, author, created, modified }
}
