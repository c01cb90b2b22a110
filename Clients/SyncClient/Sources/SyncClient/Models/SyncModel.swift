/// A typed item of one collection (protocol §2), so apps read and write Swift values instead of JSON.
///
/// The replica stores the server's JSON; `SyncClient.all(_:)` decodes it into these models and `save(_:)` encodes
/// them back. Server-set fields (`modified`, `author`, `created`, `lastMessageAt`, dates as `Date`) are optional: an item created
/// offline has none until the server answers, and the server ignores them when they are sent back.
///
/// The models of the default data model (`Contact`, `MessageThread`, …) are generated from the server's model file
/// (`FamilyModels.swift`, by `syncapi model swift`); a type conforms by naming its collection.
public protocol SyncModel: Codable, Sendable {
    /// The name of the collection the model's items live in (`contacts`).
    static var collectionName: String { get }
    /// The item's id (chosen by the client, e.g. a UUID).
    var id: String { get }
    /// The parent's id for messages (the thread) and comments (the post); nil elsewhere.
    var parentID: String? { get }
    /// The fields a `SyncQuery` may name by key path, with their JSON names (`\Contact.lastName: "lastName"`).
    /// Types generated from a data model list all of theirs; a hand-written model lists none unless it says so, and
    /// its queries name fields by string.
    static var queryFields: [PartialKeyPath<Self>: String] { get }
}

extension SyncModel {
    public var parentID: String? { nil }

    public static var queryFields: [PartialKeyPath<Self>: String] { [:] }

    /// The collection the model's items live in.
    public static var syncCollection: SyncCollection { SyncCollection(collectionName) }
}

/// The key under which the SDK hands a child model its parent's id while decoding (never sent to the server).
let parentKey = "_parent"

extension KeyedDecodingContainer {
    /// A member that may be missing (an item saved offline without it): the protocol's default then.
    func value<T: Decodable>(_ key: Key, default value: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? value
    }
}
