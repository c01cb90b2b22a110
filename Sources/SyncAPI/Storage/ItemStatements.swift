/// The statements that item reads and writes are made of, in one backend's SQL, run on one connection inside the
/// transaction or snapshot that its `ItemExecutor` opened.
///
/// A backend supplies only these and how to run them; the orchestration built on them (lock the family, read, plan,
/// bump, write; read the counter and the rows in one snapshot) is written once, in `ItemExecutor+Orchestration.swift`.
package protocol ItemStatements {
    /// The family's change counter and purge horizon (nil for an unknown family). With `lock`, the family row is first
    /// locked for the rest of the transaction (that lock orders every write of the family), and its usage is read.
    func family(_ spaceID: String, lock: Bool) async throws -> FamilyCounter?
    /// One item row, live or tombstone.
    func item(spaceID: String, key: ItemKey) async throws -> StoredItem?
    /// The next version of the family's change counter, taken by this transaction (and told to the family's streams at
    /// its commit); 401 for an unknown family.
    func bump(spaceID: String) async throws -> Int64
    /// Stores one row at `version` or, when it is nil, at the next value of the family's counter (bumped by this call),
    /// and tombstones the row's children when it asks to.
    func store(_ row: RowWrite, spaceID: String, version: Int64?, nowMs: Int64) async throws -> StoredItem
    /// Marks the family's media of these hashes as named at `nowMs` (unknown hashes change nothing): a write that
    /// names media, or stops naming it (a replaced or deleted post), keeps the file at least a tombstone retention
    /// from now, as long as a client may still show the old post (protocol §10).
    func touchMedia(spaceID: String, hashes: [String], nowMs: Int64) async throws
    /// The counter, the horizon and the top-level rows of `collections` changed after `since` (tombstones included),
    /// or every live row when `since` is nil, oldest change first; nil for an unknown family.
    func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta?
    /// Every live top-level row of `collection` as `/verify` digests it, sorted by id (byte order), one at a time.
    func verifyRows(spaceID: String, collection: String, _ each: @Sendable (VerifyRow) -> Void) async throws
    /// Live items of a page's list (its tag filter applied) in sort order, newest first unless `oldestFirst`, at most
    /// `limit`: only those changed after `changedAfter` when given, only those placed as `bound` says when given. With
    /// a `budget`, bodies past it are withheld as they are read (`PageBytes`).
    func liveItems(
        _ query: PageQuery, spaceID: String, changedAfter: Int64?, bound: AnchorBound?, oldestFirst: Bool, limit: Int, budget: Int?
    ) async throws -> [StoredItem]
    /// Ids of the list changed after `since` that a client must drop (deleted, or now outside the tag filter), in
    /// version order (protocol §4).
    func goneIDs(_ query: PageQuery, spaceID: String, since: Int64) async throws -> [String]
    /// The newest `children.limit` live children of each parent, by parent id (every parent has an entry); their bodies
    /// are kept within `budget`, counted over the parents in the order given (`PageBytes`).
    func children(_ children: ChildrenQuery, spaceID: String, of parentIDs: [String], budget: Int) async throws -> [String: [StoredItem]]
}

/// A family's change counter and the version below which its tombstones were purged.
package struct FamilyCounter: Sendable {
    package let version: Int64
    package let horizon: Int64
    /// Read only with the family's lock (a write's quotas); zero otherwise.
    package var usage = FamilyUsage()
    /// The history the counter is on (`SpaceLineage`).
    package var lineage = SpaceLineage.original

    package init(version: Int64, horizon: Int64, usage: FamilyUsage = FamilyUsage(), lineage: SpaceLineage = .original) {
        self.version = version
        self.horizon = horizon
        self.usage = usage
        self.lineage = lineage
    }
}

/// Where items sit relative to a page's anchor, in the list's sort order (sort key desc, id desc).
package enum AnchorBound: Sendable {
    /// The anchor and the items above it (newer).
    case atOrAbove(StoredItem)
    /// The items strictly below it (older).
    case below(StoredItem)
}

/// A backend as the orchestration sees it: how to run its `Statements` in a write transaction, in one snapshot, and
/// one statement alone. Stores conform and forward their `SyncStore` item methods to the orchestration.
package protocol ItemExecutor: Sendable {
    associatedtype Statements: ItemStatements

    /// Runs `body` in one write transaction, committed when it returns and rolled back when it throws. A backend may
    /// run `body` again after a serialization failure, so it must have no effect outside the database.
    func inWriteTransaction<T: Sendable>(_ body: @escaping @Sendable (Statements) async throws -> T) async throws -> T
    /// Runs `body`, whose reads all come from one snapshot: the pinned one inside `withReadSnapshot`, else its own.
    func inSnapshot<T: Sendable>(_ body: @escaping @Sendable (Statements) async throws -> T) async throws -> T
    /// Runs `body`, which makes one call on `Statements` (each call reads one snapshot by itself), opening no
    /// transaction where the backend needs none: on PostgreSQL that spares the hottest reads two round trips.
    func inSingleStatement<T: Sendable>(_ body: @escaping @Sendable (Statements) async throws -> T) async throws -> T
}
