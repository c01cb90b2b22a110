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
    /// Filter value (the model's filter field of a paginated item).
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

    /// The row without its body: a page row whose body did not fit its answer (`PageBytes`).
    package var withheld: StoredItem {
        StoredItem(id: id, version: version, deleted: deleted, body: nil, sortMs: sortMs, sortVersion: sortVersion, tag: tag)
    }
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
    /// What the family holds before this write (for its quotas).
    public let usage: FamilyUsage

    public init(existing: StoredItem?, parent: StoredItem?, usage: FamilyUsage = FamilyUsage()) {
        self.existing = existing
        self.parent = parent
        self.usage = usage
    }
}

/// What a family holds, counted by the database in the transaction of every item write (a trigger on `items`): its
/// live items and their stored bytes (canonical JSON, tombstones not counted). Quotas are checked against it.
public struct FamilyUsage: Sendable, Equatable {
    public var items: Int64
    public var bytes: Int64

    public init(items: Int64 = 0, bytes: Int64 = 0) {
        self.items = items
        self.bytes = bytes
    }
}

/// The result of a write: the row as it now stands, and whether the family's data moved.
public struct WriteOutcome: Sendable {
    public let item: StoredItem?
    public let changed: Bool
}

/// One `SyncStore.delta` call, named by its arguments: what a group's run of reads asks for before it runs
/// (`SyncStore.prefetchingDeltas`).
public struct DeltaRequest: Hashable, Sendable {
    public let spaceID: String
    public let collections: [String]
    public let since: Int64?

    public init(spaceID: String, collections: [String], since: Int64?) {
        self.spaceID = spaceID
        self.collections = collections
        self.since = since
    }
}

/// The rows of some collections changed after a version, read in one snapshot with the family's counter.
public struct Delta: Sendable {
    /// The family change counter in that snapshot: the position the answer brings the client to.
    public let version: Int64
    /// Tombstones at or below this version have been purged: an older position cannot be answered exactly.
    public let horizon: Int64
    /// Changed rows (live items and tombstones) by collection, oldest change first; empty when `overflowed`.
    public let rows: [String: [StoredItem]]
    /// The changed rows (every live row, without a date) held more than `Delta.byteBudget`: none were kept, and the
    /// caller answers the whole list, streamed (a delta is built whole, so its memory must be bounded whatever the date).
    public let overflowed: Bool
    /// The history the counter is on, read with it: whether the client's date is on the space's line.
    public let lineage: SpaceLineage

    /// The most bytes of changed rows a delta holds: past it, a full list streamed from a cursor is cheaper to hold.
    public static let byteBudget = 4 << 20

    public init(version: Int64, horizon: Int64, rows: [String: [StoredItem]], overflowed: Bool = false, lineage: SpaceLineage = .original) {
        self.version = version
        self.horizon = horizon
        self.rows = overflowed ? [:] : rows
        self.overflowed = overflowed
        self.lineage = lineage
    }

    /// Whether `since` can be answered exactly by this delta: not past the counter, not before the purge horizon, on
    /// the space's line (`SpaceLineage`).
    public func answers(_ since: DatePosition) -> Bool {
        since.version <= version && since.version >= horizon && since.isHeld(by: lineage)
    }
}

/// A delta's rows as a statement returns them, kept while their bytes stay within `Delta.byteBudget`: the one fold
/// of delta rows, whichever statement read them. A dateless read (`since` nil: a bundle's first sync) is bounded the
/// same way: past the budget its caller streams the rows from a cursor instead.
package struct DeltaRows {
    package private(set) var rows: [String: [StoredItem]] = [:]
    package private(set) var bytes = 0
    package private(set) var overflowed = false

    package init() {}

    package mutating func append(_ item: StoredItem, to collection: String) {
        guard !overflowed else { return }
        bytes += (item.body?.utf8.count ?? 0) + item.id.utf8.count + 16
        guard bytes <= Delta.byteBudget else {
            overflowed = true
            rows = [:]
            return
        }
        rows[collection, default: []].append(item)
    }

    package func delta(version: Int64, horizon: Int64, lineage: SpaceLineage = .original) -> Delta {
        Delta(version: version, horizon: horizon, rows: rows, overflowed: overflowed, lineage: lineage)
    }
}

/// A new account to store, password already hashed.
public struct NewAccount: Sendable {
    public let id: String
    public let username: String
    public let displayName: String
    public let passwordHash: String
    /// The account's public profile, as the endpoint of the family-scoped singleton sends it.
    public let profileBody: String
    /// The account's singleton (the family app's settings) until its first write, in `settingsCollection` (nil: the
    /// model has no account-scoped singleton).
    public let settingsBody: String
    public let settingsCollection: String?

    public init(
        id: String, username: String, displayName: String, passwordHash: String, profileBody: String, settingsBody: String,
        settingsCollection: String?
    ) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.profileBody = profileBody
        self.settingsBody = settingsBody
        self.settingsCollection = settingsCollection
    }
}

extension NewAccount {
    /// The item rows an account adds to its family: its public profile and its singleton (the family app's settings)
    /// with its defaults, when the model has one.
    package var rows: [RowWrite] {
        var rows = [RowWrite(key: ItemKey(collection: Collections.accountsKey, id: id), body: profileBody)]
        if let settingsCollection { rows.append(RowWrite(key: ItemKey(collection: settingsCollection, id: id), body: settingsBody)) }
        return rows
    }
}

/// One login-throttle key's window: attempts counted since it began.
public struct ThrottleWindow: Sendable, Equatable {
    public let attempts: Int
    public let startMs: Int64

    public init(attempts: Int, startMs: Int64) {
        self.attempts = attempts
        self.startMs = startMs
    }
}

/// One account of a family, as `GET /accounts` lists it.
public struct AccountRecord: Sendable, Equatable {
    public let id: String
    public let username: String
    public let displayName: String
    /// Whether it is an owner of the family now.
    public let owner: Bool

    public init(id: String, username: String, displayName: String, owner: Bool) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.owner = owner
    }

    /// The storage keys of the items an account owns: its public profile and its singleton, of `collections`.
    package static func itemKeys(_ id: String, _ collections: [String]) -> [ItemKey] {
        collections.map { ItemKey(collection: $0, id: id) }
    }
}

/// What login needs to check a password.
public struct AccountCredentials: Sendable {
    public let accountID: String
    public let spaceID: String
    public let passwordHash: String

    package init(accountID: String, spaceID: String, passwordHash: String) {
        self.accountID = accountID
        self.spaceID = spaceID
        self.passwordHash = passwordHash
    }
}

/// A request's caller in one space: the account, the space (the tenant every query is scoped to; `spaceID`, as the
/// default model calls it), its role there, and where its dates of sync start to count (`SpaceMembership`).
public struct Session: Sendable, Equatable {
    public let accountID: String
    public let spaceID: String
    public let role: SpaceRole
    /// Dates of sync below this version answer `sync: false` to this account (issued before it last joined).
    public let sinceVersion: Int64

    public init(accountID: String, spaceID: String, role: SpaceRole, sinceVersion: Int64 = 0) {
        self.accountID = accountID
        self.spaceID = spaceID
        self.role = role
        self.sinceVersion = sinceVersion
    }
}

/// One live item as `/verify` digests it: its id and stored `modified`, with the sort key and tag that place it in a
/// paginated list; no body.
public struct VerifyRow: Sendable {
    public let collection: String
    public let id: String
    /// The `modified` member of its stored body (nil when it has none).
    public let modified: String?
    public let sortMs: Int64?
    public let tag: String?

    public init(collection: String, id: String, modified: String?, sortMs: Int64?, tag: String?) {
        self.collection = collection
        self.id = id
        self.modified = modified
        self.sortMs = sortMs
        self.tag = tag
    }
}

/// The model and model generations a database records (`syncapi_meta`), as read before a change is decided.
public struct RecordedModel: Sendable, Equatable {
    public var model: String?
    public var generations: String?

    public init(model: String?, generations: String?) {
        self.model = model
        self.generations = generations
    }
}

/// The space an identity account is made in (`AccountStore.createIdentityAccount`).
public struct NewSpace: Sendable {
    public let id: String
    public let name: String
    /// Its family-scoped singleton's item, when the model has one.
    public let familyItem: RowWrite?
    /// Whether the account becomes its owner (a `"space"` named on the exchange) or only is made in it (none named).
    public let member: Bool

    public init(id: String, name: String, familyItem: RowWrite?, member: Bool) {
        self.id = id
        self.name = name
        self.familyItem = familyItem
        self.member = member
    }
}
