/// Where an item lives: its collection, its parent (empty for top-level items) and its id, inside one family.
public struct ItemKey: Sendable, Hashable {
    public let collection: String
    public let parentID: String
    public let id: String

    public init(collection: String, parentID: String = "", id: String) {
        self.collection = collection
        self.parentID = parentID
        self.id = id
    }
}

/// One stored item row: live with its canonical JSON, or a tombstone.
public struct StoredItem: Sendable, Equatable {
    public let id: String
    /// The family change counter value at this row's last change.
    public let version: Int64
    public let deleted: Bool
    /// The canonical JSON of the item as clients receive it; nil for a tombstone.
    public let body: String?
    /// Sort key of paginated and child items (ms), kept by tombstones.
    public let sortMs: Int64?
    /// The version at which the sort key last moved.
    public let sortVersion: Int64?
    /// Filter value (a wall post's type).
    public let tag: String?

    public init(
        id: String, version: Int64, deleted: Bool, body: String?, sortMs: Int64? = nil, sortVersion: Int64? = nil, tag: String? = nil
    ) {
        self.id = id
        self.version = version
        self.deleted = deleted
        self.body = body
        self.sortMs = sortMs
        self.sortVersion = sortVersion
        self.tag = tag
    }

    /// The row when live, nil for a tombstone.
    public var live: StoredItem? { deleted ? nil : self }
}

/// One row a write stores, at the write's version.
public struct RowWrite: Sendable {
    public var key: ItemKey
    /// Canonical JSON; nil makes a tombstone.
    public var body: String?
    public var sortMs: Int64?
    /// True when the sort key moved (or the row is new): its sort version becomes the write's version.
    public var sortMoved: Bool
    public var tag: String?
    /// Tombstone every live child of this collection under the row (deleting a thread deletes its messages).
    public var deleteChildren: String?

    public init(
        key: ItemKey, body: String?, sortMs: Int64? = nil, sortMoved: Bool = false, tag: String? = nil, deleteChildren: String? = nil
    ) {
        self.key = key
        self.body = body
        self.sortMs = sortMs
        self.sortMoved = sortMoved
        self.tag = tag
        self.deleteChildren = deleteChildren
    }
}

/// What a write decided to do with the rows it read under the family lock.
public enum WritePlan: Sendable {
    /// Nothing changes (identical PUT, delete of a missing item); no version is used.
    case unchanged
    /// Store these rows, all at one new version of the family counter.
    case write([RowWrite])
}

/// The rows a write's plan decides from, read under the family lock.
public struct WriteContext: Sendable {
    /// The target row (live or tombstone), if any.
    public let existing: StoredItem?
    /// The parent row of a child item (live or tombstone), if any.
    public let parent: StoredItem?
}

/// The result of a write: the row as it now stands, and whether the family's data moved.
public struct WriteOutcome: Sendable {
    public let item: StoredItem?
    public let changed: Bool
}

/// The rows of some collections changed after a version, read in one snapshot with the family's counter.
public struct Delta: Sendable {
    /// The family change counter in that snapshot: the position the answer brings the client to.
    public let version: Int64
    /// Tombstones at or below this version have been purged: an older position cannot be answered exactly.
    public let horizon: Int64
    /// Changed rows (live items and tombstones) by collection, oldest change first.
    public let rows: [String: [StoredItem]]

    public init(version: Int64, horizon: Int64, rows: [String: [StoredItem]]) {
        self.version = version
        self.horizon = horizon
        self.rows = rows
    }
}

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
    /// The first live items of the list, in sort order (at most limit + 1).
    public let top: [StoredItem]
    /// True when a live item sorts strictly below the anchor.
    public let belowAnchor: Bool
    /// The last live item of the list.
    public let bottom: StoredItem?
    /// Ids of the list deleted after `since` (never filtered, never paginated).
    public let deleted: [String]
    /// Newest live children of each item of `changed` and `top`, by parent id, in sort order.
    public let children: [String: [StoredItem]]
}

/// A page of a sorted list below a place, read in one snapshot.
public struct PageRows: Sendable {
    /// Live items strictly below the anchor (from the top without one), in sort order (at most limit + 1).
    public let items: [StoredItem]
    public let children: [String: [StoredItem]]
}

/// A new account to store, password already hashed.
public struct NewAccount: Sendable {
    public let id: String
    public let username: String
    public let displayName: String
    public let passwordHash: String
    /// The account's public profile, as `familysync` sends it.
    public let profileBody: String
    /// The account's settings until its first `PUT /settings`.
    public let settingsBody: String

    public init(id: String, username: String, displayName: String, passwordHash: String, profileBody: String, settingsBody: String) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.profileBody = profileBody
        self.settingsBody = settingsBody
    }
}

extension NewAccount {
    /// The item rows an account adds to its family: its public profile and its default settings.
    var rows: [RowWrite] {
        [
            RowWrite(key: ItemKey(collection: Collections.accountsKey, id: id), body: profileBody),
            RowWrite(key: ItemKey(collection: Collections.settings.name, id: id), body: settingsBody),
        ]
    }
}

/// What login needs to check a password.
public struct AccountCredentials: Sendable {
    public let accountID: String
    public let familyID: String
    public let passwordHash: String
}

/// An authenticated caller: the account and its family (the tenant every query is scoped to).
public struct Session: Sendable, Equatable {
    public let accountID: String
    public let familyID: String

    public init(accountID: String, familyID: String) {
        self.accountID = accountID
        self.familyID = familyID
    }
}

/// The storage interface of the engine: everything SyncAPI keeps goes through it, and it speaks only SQL.
///
/// Two implementations, `SQLiteStore` (embedded default) and `PostgresStore`, pass one conformance suite.
/// Every item method takes the family id first: no query can leave its tenant.
public protocol SyncStore: Sendable {
    /// Creates or upgrades the schema; safe to run concurrently from several instances.
    func migrate() async throws
    /// The random id of this database, put in dates of sync so that a token from another database is recognised.
    func databaseID() async throws -> String
    /// Succeeds when the database answers (readiness).
    func ping() async throws

    /// Creates a family (its change counter and its family item) and its first account; throws `username_taken`.
    func createFamily(id: String, name: String, familyBody: String, account: NewAccount, nowMs: Int64) async throws
    /// Adds an account to a family and publishes its profile as a change of the family; throws `username_taken`.
    func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64) async throws
    /// The credentials for a lower-cased username, if such an account exists.
    func credentials(usernameKey: String) async throws -> AccountCredentials?
    /// Stores a bearer token by its hash.
    func insertToken(hash: String, session: Session, expiresMs: Int64) async throws
    /// The session of an unexpired token hash.
    func session(tokenHash: String, nowMs: Int64) async throws -> Session?
    /// Revokes a token at once.
    func deleteToken(hash: String) async throws
    /// Failed logins for a username inside the current window: count and window start.
    func failedLogins(usernameKey: String) async throws -> (count: Int, windowStartMs: Int64)?
    /// Counts one failed login, starting a new window when the last one is older than `windowMs`.
    func recordFailedLogin(usernameKey: String, nowMs: Int64, windowMs: Int64) async throws
    /// Forgets failed logins after a success.
    func clearFailedLogins(usernameKey: String) async throws

    /// One item row (live or tombstone) of a family.
    func item(familyID: String, key: ItemKey) async throws -> StoredItem?
    /// Reads the row (and its parent, for a child) under the family's lock, lets `plan` decide, and stores the decided
    /// rows at the next version of the family's change counter, all in one transaction (so versions are in commit order).
    func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome
    /// Top-level rows of `collections` changed after `since` (tombstones included), or every live row when `since`
    /// is nil, read in one snapshot with the family's counter.
    func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta
    /// The rows of a paginated sync (protocol §4) after `since` (nil: no date), in one snapshot.
    func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows
    /// The live items below `query.anchorID` with their children; nil when the anchor never existed.
    func page(familyID: String, query: PageQuery) async throws -> PageRows?
    /// Deletes tombstones last changed before `cutoffMs` and raises each affected family's horizon to the newest
    /// version purged, so that an older date of sync answers `sync: false` (protocol §8). Returns how many went.
    func purgeTombstones(cutoffMs: Int64) async throws -> Int
    /// Runs `body` with every read of this store (in this task and its child tasks) answered from one snapshot of
    /// the database, so that several answers are consistent with each other (protocol §6). Writes are not affected.
    func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T
}
