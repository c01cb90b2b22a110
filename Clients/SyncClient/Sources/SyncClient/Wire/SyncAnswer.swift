/// The answer of a list's sync endpoint (protocol §3, as `ctcsync`): what changed since the date sent.
public struct SyncAnswer: Codable, Sendable, Equatable {
    /// The new date of sync, opaque: stored and sent back unmodified.
    public var date: String
    /// False: `updated` is the whole list and replaces the replica's copy.
    public var sync: Bool
    /// Items created or changed since the date, oldest change first.
    public var updated: [JSONObject]
    /// Ids deleted since the date.
    public var deleted: [String]

    public init(date: String, sync: Bool, updated: [JSONObject], deleted: [String]) {
        self.date = date
        self.sync = sync
        self.updated = updated
        self.deleted = deleted
    }
}

/// The answer of a paginated list's sync endpoint (protocol §4, as `msgsyncthread`): the top of a sorted list, with
/// each parent carrying its newest children.
public struct PagedSyncAnswer: Codable, Sendable, Equatable {
    public var date: String
    /// False: `updated` is the first page and replaces the replica's list.
    public var sync: Bool
    public var updated: [JSONObject]
    public var deleted: [String]
    /// True: too much changed; the replica keeps only `updated` (a fresh top page).
    public var crop: Bool
    /// True: the server has no item below what the replica now holds.
    public var nomore: Bool

    public init(date: String, sync: Bool, updated: [JSONObject], deleted: [String], crop: Bool, nomore: Bool) {
        self.date = date
        self.sync = sync
        self.updated = updated
        self.deleted = deleted
        self.crop = crop
        self.nomore = nomore
    }
}

/// A page of `loadMore` (`GET /<paginated>`, `GET /<paginated>/{id}/<children>`, protocol §4):
/// the items strictly below the `lastId` sent.
public struct PageAnswer: Codable, Sendable, Equatable {
    public var items: [JSONObject]
    public var nomore: Bool
}
