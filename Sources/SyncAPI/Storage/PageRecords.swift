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
    /// The bytes of bodies the answer's parents may hold, and as many its children (`PageBytes`).
    public let byteBudget: Int

    /// The bytes of item bodies a page answer holds by default: as much as a delta (`Delta.byteBudget`).
    public static let defaultByteBudget = 4 << 20

    public init(
        collection: String, parentID: String = "", anchorID: String?, limit: Int, tags: [String]?, children: ChildrenQuery?,
        byteBudget: Int = PageQuery.defaultByteBudget
    ) {
        self.collection = collection
        self.parentID = parentID
        self.anchorID = anchorID
        self.limit = limit
        self.tags = tags
        self.children = children
        self.byteBudget = byteBudget
    }
}

/// Which bodies a page answer keeps, in the answer's order, so that an answer, which is built whole, stays bounded (500
/// threads of 100 messages can reach a family's whole 1 GiB): a body is kept while the running total of the bodies read
/// so far stays within the budget, the first always, and none after the first that does not fit.
/// Statements apply it as they read, so that a refused body is never held (PostgreSQL in SQL, as a running sum over the
/// same order); a refused row keeps everything but its body (`StoredItem.withheld`), and the engine ends its answer
/// before it, saying that more follows (`nomore` false), which is exact: the client asks for the rest.
public struct PageBytes: Sendable {
    public let budget: Int
    private var total = 0
    private var count = 0

    public init(budget: Int) { self.budget = budget }

    /// Whether a body of `bytes` is kept.
    public mutating func keep(_ bytes: Int) -> Bool {
        count += 1
        total += bytes
        return count == 1 || total <= budget
    }
}

/// Everything a paginated sync decides from, read in one snapshot.
public struct PageSyncRows: Sendable {
    public let version: Int64
    public let horizon: Int64
    /// The `lastId` row (live or tombstone), nil when unknown or not asked.
    public let anchor: StoredItem?
    /// Live items changed after `since`, at or above the anchor, in sort order (at most limit + 1); their bodies only
    /// when the answer is made of them (`firstPage` false).
    public let changed: [StoredItem]
    /// The first live items of the list, in sort order (at most limit + 1), read only when the answer is a fresh first
    /// page (`needsFirstPage`), empty otherwise: a client brought up to date by its changes needs none of them, nor
    /// their children.
    /// Bodies past the query's byte budget are withheld (`PageBytes`).
    public let top: [StoredItem]
    /// True when a live item sorts strictly below the anchor.
    public let belowAnchor: Bool
    /// The last live item of the list.
    public let bottom: StoredItem?
    /// Ids of the list deleted after `since` (never filtered, never paginated).
    public let deleted: [String]
    /// Newest live children of the first `limit` items of the answer's list (`top`, else `changed`), by parent id, in
    /// sort order; bodies past the query's byte budget (counted over the parents in order) are withheld.
    public let children: [String: [StoredItem]]
    /// Whether the answer is a fresh first page (`needsFirstPage`): `top` was read.
    public let firstPage: Bool
    /// The history the counter is on (`SpaceLineage`): a date on another line is answered as a first page.
    public let lineage: SpaceLineage

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
    /// changed, or their bodies do not fit the byte budget (`crop`: all changes or none; `fits` is false when a body of
    /// `changed` was withheld).
    public static func needsFirstPage(answerable: Bool, changed: Int, fits: Bool, limit: Int) -> Bool {
        !answerable || changed > limit || !fits
    }

    /// The parents whose children an answer carries: its list's first `limit` items.
    package static func parents(changed: [StoredItem], top: [StoredItem], limit: Int) -> [String] {
        (top.isEmpty ? changed : top).prefix(limit).map(\.id)
    }

    package init(
        version: Int64, horizon: Int64, anchor: StoredItem?, changed: [StoredItem], top: [StoredItem], belowAnchor: Bool, bottom: StoredItem?,
        deleted: [String], children: [String: [StoredItem]], firstPage: Bool, lineage: SpaceLineage = .original
    ) {
        self.lineage = lineage
        self.version = version
        self.horizon = horizon
        self.anchor = anchor
        self.changed = changed
        self.top = top
        self.belowAnchor = belowAnchor
        self.bottom = bottom
        self.deleted = deleted
        self.children = children
        self.firstPage = firstPage
    }
}

/// A page of a sorted list below a place, read in one snapshot.
public struct PageRows: Sendable {
    /// Live items strictly below the anchor (from the top without one), in sort order (at most limit + 1); bodies past
    /// the query's byte budget are withheld (`PageBytes`).
    public let items: [StoredItem]
    /// Newest live children of the first `limit` items, as `PageSyncRows.children`.
    public let children: [String: [StoredItem]]

    package init(items: [StoredItem], children: [String: [StoredItem]]) {
        self.items = items
        self.children = children
    }
}
