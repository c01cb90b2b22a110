/// A conversation (`/threads`, a paginated list synced by `msgsyncthread`, newest `lastMessageAt` first). Named
/// `MessageThread` so it never hides Foundation's `Thread`.
public struct MessageThread: SyncModel, Equatable {
    public static let collection = SyncCollection.threads
    public var id: String
    public var title: String
    public var participants: [String]
    public var read: Bool
    public var lastMessageAt: String?
    public var modified: String?

    public init(id: String, title: String, participants: [String] = [], read: Bool = false) {
        self.id = id
        self.title = title
        self.participants = participants
        self.read = read
    }

    enum CodingKeys: String, CodingKey { case id, title, participants, read, lastMessageAt, modified }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        participants = try container.value(.participants, default: [])
        read = try container.value(.read, default: false)
        lastMessageAt = try container.decodeIfPresent(String.self, forKey: .lastMessageAt)
        modified = try container.decodeIfPresent(String.self, forKey: .modified)
    }
}
