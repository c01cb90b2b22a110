import Foundation

/// The collections of protocol §2, with where each lives on the server and how the replica orders it. Named
/// `SyncCollection`, not `Collection`, so it never hides Swift's `Collection` protocol in an app that imports the SDK.
public enum SyncCollection: String, Sendable, CaseIterable, Codable {
    case contacts, events, places, threads, messages, wall, comments, family, members, settings, accounts

    /// How the server lists it.
    public enum Kind: Sendable { case fullList, paginated, child, singleton, familyList }

    public var kind: Kind {
        switch self {
        case .contacts, .events, .places: return .fullList
        case .threads, .wall: return .paginated
        case .messages, .comments: return .child
        case .family, .settings: return .singleton
        case .members, .accounts: return .familyList
        }
    }

    /// The parent collection of a child collection.
    public var parentCollection: SyncCollection? {
        switch self {
        case .messages: return .threads
        case .comments: return .wall
        default: return nil
        }
    }

    /// The children of a paginated collection, and their key inside a parent item.
    var childCollection: SyncCollection? {
        switch self {
        case .threads: return .messages
        case .wall: return .comments
        default: return nil
        }
    }

    /// The field the server sorts a paginated or child list by (newest first, then by id, descending).
    var sortField: String? {
        switch self {
        case .threads: return "lastMessageAt"
        case .wall, .messages, .comments: return "created"
        default: return nil
        }
    }

    /// The item's path under `/api/v1` (nil for `accounts`, which are read-only profiles).
    func path(id: String, parent: String?) -> String? {
        switch self {
        case .contacts, .events, .places, .threads, .wall, .members: return "/\(rawValue)/\(Self.escape(id))"
        case .messages: return parent.map { "/threads/\(Self.escape($0))/messages/\(Self.escape(id))" }
        case .comments: return parent.map { "/wall/\(Self.escape($0))/comments/\(Self.escape(id))" }
        case .family: return "/family"
        case .settings: return "/settings"
        case .accounts: return nil
        }
    }

    static func escape(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "/"))) ?? id
    }
}

/// A list that pages (`loadMore`): threads, the wall, the messages of a thread, the comments of a post.
public enum PagedList: String, Sendable, CaseIterable {
    case threads, wall, messages, comments

    var collection: SyncCollection { SyncCollection(rawValue: rawValue)! }
}
