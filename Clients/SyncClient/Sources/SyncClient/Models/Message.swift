/// A message of a thread (`/threads/{threadId}/messages`, newest first); it travels inside its thread in syncs.
public struct Message: SyncModel, Equatable {
    public static let collection = SyncCollection.messages
    public var id: String
    /// The thread it belongs to (not a field of the server's JSON: the replica knows it from the path).
    public var threadID: String
    public var text: String
    public var author: String?
    public var created: String?
    public var modified: String?
    public var parentID: String? { threadID }

    public init(id: String, threadID: String, text: String) {
        self.id = id
        self.threadID = threadID
        self.text = text
    }

    enum CodingKeys: String, CodingKey { case id, threadID = "_parent", text, author, created, modified }
}
