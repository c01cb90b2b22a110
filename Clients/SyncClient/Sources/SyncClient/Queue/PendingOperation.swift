/// A write waiting to reach the server: one per item at most (later edits of the same item fold into it).
public struct PendingOperation: Sendable, Equatable {
    /// What the write does on the server: `patch` (a JSON Merge Patch of the fields a typed save changed, protocol
    /// §2) for an item the server has, `put` for a new one or an untyped save, `delete`.
    public enum Kind: String, Sendable { case put, patch, delete }
    public let collection: SyncCollection
    public let parent: String?
    public let id: String
    public let kind: Kind
    /// The state to send for a `put`, the merge patch for a `patch`.
    public let body: JSONObject?
    /// Bumped by every edit folded in: a server answer clears the entry only if no edit came after the push began.
    let revision: Int
}

/// A write the server refused for good (validation, a missing parent): kept for the app to inspect, never retried,
/// never blocking the queue.
public struct FailedOperation: Sendable, Equatable {
    public let collection: SyncCollection
    public let parent: String?
    public let id: String
    public let kind: PendingOperation.Kind
    public let body: JSONObject?
    public let status: Int
    public let code: ServerErrorCode
    public let detail: String
}

extension PendingOperation {
    /// What identifies a queue entry: one per item.
    struct Key: Hashable {
        let collection: SyncCollection
        let parent: String
        let id: String
    }

    var key: Key { Key(collection: collection, parent: parent ?? "", id: id) }
}
