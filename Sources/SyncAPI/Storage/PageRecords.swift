/// Which children to attach to the items of a page: the newest `limit + 1` live ones of each (one more than asked, so
/// that the engine knows whether there are older ones).
public struct ChildrenQuery: Sendable {
    public let collection: String
    public let limit: Int

    public init(collection: String, limit: Int) {
        self.collection = collection
        self.limit = limit
    }
}

/// Where and what a page reads: one sorted list (sort key desc, id desc) of one collection under one parent.
public struct PageQuery: Sendable {
    public let collection: String
    /// Empty for top-level lists; the parent's id for children.
    public let parentID: String
    /// `lastId`: the place to start below (pages) or the client's last item (sync).
    public let anchorID: String?
    /// Rows wanted; stores read one more to tell whether more exist.
    public let limit: Int
    /// Only items whose tag is one of these (nil: all).
    public let tags: [String]?
    public let children: ChildrenQuery?

    public init(collection: String, parentID: String = "", anchorID: String?, limit: Int, tags: [String]?, children: ChildrenQuery?) {
        self.collection = collection
        self.parentID = parentID
        self.anchorID = anchorID
        self.limit = limit
        self.tags = tags
        self.children = children
    }
}

/// Everything a paginated sync decides from, read in one snapshot.
public struct PageSyncRows: Sendable {
    public let version: Int64
    public let horizon: Int64
    /// The `lastId` row (live or tombstone), nil when unknown or not asked.
    public let anchor: StoredItem?
    /// Live items changed after `since`, at or above the anchor, in sort order (at most limit + 1).
    public let changed: [StoredItem]
    /// The first live items of the list, in sort order (at most limit + 1), read only when the answer is a fresh first
    /// page (`needsFirstPage`), empty otherwise: a client brought up to date by its changes needs none of them, nor
    /// their children (issue 19: a page sync of a few changed threads read 21 more threads and 231 messages for
    /// nothing).
    public let top: [StoredItem]
    /// True when a live item sorts strictly below the anchor.
    public let belowAnchor: Bool
    /// The last live item of the list.
    public let bottom: StoredItem?
    /// Ids of the list deleted after `since` (never filtered, never paginated).
    public let deleted: [String]
    /// Newest live children of each item of `changed` and `top`, by parent id, in sort order.
    public let children: [String: [StoredItem]]

    /// Whether a sync from `since` can bring the client's list up to date (protocol §4): from a position this server
    /// can answer (not past the family's counter, not before its purge horizon), and, with a `lastId`, only when that
    /// item's place is known: it exists (or existed) and its sort key has not moved since that position. The stores
    /// decide from it what to read (PostgreSQL's page statement writes the same test in SQL) and the engine what to
    /// answer.
    public static func answerable(since: Int64?, version: Int64, horizon: Int64, anchorID: String?, anchor: StoredItem?) -> Bool {
        guard let since, since <= version, since >= horizon else { return false }
        guard anchorID != nil else { return true }
        guard let anchor else { return false }
        return (anchor.sortVersion ?? .max) <= since
    }

    /// Whether the answer is a fresh first page (`top`): the date cannot be answered, or more than `limit` items
    /// changed (`crop`).
    public static func needsFirstPage(answerable: Bool, changed: Int, limit: Int) -> Bool {
        !answerable || changed > limit
    }
}

/// A page of a sorted list below a place, read in one snapshot.
public struct PageRows: Sendable {
    /// Live items strictly below the anchor (from the top without one), in sort order (at most limit + 1).
    public let items: [StoredItem]
    public let children: [String: [StoredItem]]
}
