/// A typed item of one collection (protocol §2), stored in the replica as the server's JSON.
///
/// Server-set fields (`modified`, `author`, `created`, `lastMessageAt`) are optional: they are absent on an item
/// created offline until the server answers, and the server ignores them when sent back.
public protocol SyncModel: Codable, Sendable {
    static var collection: SyncCollection { get }
    var id: String { get }
    /// The parent's id for messages (the thread) and comments (the post); nil elsewhere.
    var parentID: String? { get }
}

extension SyncModel {
    public var parentID: String? { nil }
}

public struct Contact: SyncModel, Equatable {
    public static let collection = SyncCollection.contacts
    public var id: String
    public var firstName: String?
    public var lastName: String?
    public var emails: [String]?
    public var phones: [String]?
    public var birthdayEventId: String?
    public var notes: String?
    public var modified: String?

    public init(id: String, firstName: String? = nil, lastName: String? = nil, emails: [String]? = nil, phones: [String]? = nil) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.emails = emails
        self.phones = phones
    }
}

public struct Event: SyncModel, Equatable {
    public static let collection = SyncCollection.events
    public var id: String
    public var title: String
    public var start: String
    public var end: String?
    public var allDay: Bool?
    public var location: String?
    public var contactIds: [String]?
    public var modified: String?

    public init(id: String, title: String, start: String) {
        self.id = id
        self.title = title
        self.start = start
    }
}

public struct Place: SyncModel, Equatable {
    public static let collection = SyncCollection.places
    public var id: String
    public var name: String
    public var address: String?
    public var latitude: Double?
    public var longitude: Double?
    public var modified: String?

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

public struct MessageThread: SyncModel, Equatable {
    public static let collection = SyncCollection.threads
    public var id: String
    public var title: String
    public var participants: [String]?
    public var read: Bool?
    public var lastMessageAt: String?
    public var modified: String?

    public init(id: String, title: String) {
        self.id = id
        self.title = title
    }
}

public struct Message: SyncModel, Equatable {
    public static let collection = SyncCollection.messages
    public var id: String
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

public struct WallPost: SyncModel, Equatable {
    public static let collection = SyncCollection.wall
    public var id: String
    public var type: String
    public var text: String?
    public var mediaUrl: String?
    public var author: String?
    public var created: String?
    public var modified: String?

    public init(id: String, type: String, text: String? = nil, mediaUrl: String? = nil) {
        self.id = id
        self.type = type
        self.text = text
        self.mediaUrl = mediaUrl
    }
}

public struct Comment: SyncModel, Equatable {
    public static let collection = SyncCollection.comments
    public var id: String
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

public struct Family: SyncModel, Equatable {
    public static let collection = SyncCollection.family
    public var id: String
    public var name: String
    public var pictureUrl: String?
    public var modified: String?
}

public struct Member: SyncModel, Equatable {
    public static let collection = SyncCollection.members
    public var id: String
    public var name: String
    public var role: String?
    public var birthDate: String?
    public var accountId: String?
    public var modified: String?

    public init(id: String, name: String, role: String? = nil) {
        self.id = id
        self.name = name
        self.role = role
    }
}

public struct Settings: SyncModel, Equatable {
    public static let collection = SyncCollection.settings
    public var id: String
    public var locale: String?
    public var timeZone: String?
    public var notifications: Bool?
    public var modified: String?
}

/// Another login of the family (read-only public profile).
public struct AccountProfile: SyncModel, Equatable {
    public static let collection = SyncCollection.accounts
    public var id: String
    public var username: String
    public var displayName: String
    public var modified: String?
}
