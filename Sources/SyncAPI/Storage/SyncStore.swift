import NIOCore

/// The storage interface of the engine: everything SyncAPI keeps goes through it, and it speaks only SQL. It is made
/// of one protocol per role, so that a caller names the part it uses and a pinned snapshot is a type of its own.
///
/// Two implementations, `SQLiteStore` (embedded default) and `PostgresStore`, pass one conformance suite.
/// Every item method takes the family id first: no query can leave its tenant.
public protocol SyncStore: SchemaStore, AccountStore, SpaceStore, ItemStore, MaintenanceStore {}

/// The store's roles, as the store opener hands them to the application: one per consumer (a group's snapshots are
/// the engine's), each the part of the
/// store that consumer calls, so that nothing but a backend sees the union `SyncStore` (44 requirements) and a
/// reader of a consumer knows from its type what it may do to the database.
public struct StoreRoles: Sendable {
    /// Tombstones, expired tokens and emptied spaces, purged (`TombstonePurger`).
    public let purger: any MaintenanceStore
    /// Accounts, tokens and the login throttle, and the spaces an identity's sign-in answers (`AccountService`).
    public let accounts: any AccountStore & SpaceStore
    /// Spaces, memberships and invitations (`SpaceService`).
    public let spaces: any SpaceStore
    /// Readiness (`/ready`, the database answering).
    public let operations: any SchemaStore
    /// Migrations and the model served (`ModelRecord`).
    public let evolution: any SchemaStore
    /// Items, their answers and the database's identity in dates of sync (`SyncEngine`).
    public let engine: any EngineStore

    public init(_ store: some SyncStore) {
        purger = store
        accounts = store
        spaces = store
        operations = store
        evolution = store
        engine = store
    }
}

/// What the engine calls: items, and the schema's identity and generations that dates of sync carry.
public typealias EngineStore = ItemStore & SchemaStore

/// The schema, the database's identity and the model it serves.
public protocol SchemaStore: DeadlineBound {
    /// Creates or upgrades the schema with the first `count` migrations (nil: all); safe to run concurrently from
    /// several instances.
    func migrate(upTo count: Int?) async throws
    /// The random id of this database, put in dates of sync so that a token from another database is recognised.
    func databaseID() async throws -> String
    /// Replaces the database id with a new random one and returns it (after restoring a backup: every date of sync
    /// issued before then answers `sync: false`).
    func rotateDatabaseID() async throws -> String
    /// Succeeds when the database answers (readiness).
    func ping() async throws
    /// The normalized model this database last served (protocol §12), nil before the first.
    func servedModel() async throws -> String?
    /// Records the model served from now on; with `generations`, in the same transaction, the new model generations
    /// (a breaking change: dates of sync from before answer `sync: false` for the collections it touched). Only while
    /// the recorded model and generations are still `expected` (what the caller decided from; nil: none recorded):
    /// false, and nothing written, when another instance recorded first (otherwise two instances starting together
    /// would each bump the generation and refuse the other's dates).
    func recordModel(_ normalized: String, generations: String?, expected: RecordedModel) async throws -> Bool
    /// Rewrites the stored bodies of a collection's items, in batches of one transaction each (a model change:
    /// removed fields dropped, added ones filled in). `transform` answers nil to leave a body as it is; versions and
    /// `modified` stay. Returns how many bodies changed.
    func rewriteBodies(collection: String, _ transform: @escaping @Sendable (String) -> String?) async throws -> Int
    /// The model generations recorded with the model (`ModelGenerations.json`), nil before the first breaking change.
    func modelGenerations() async throws -> String?
}

/// Families, accounts, tokens and the login throttle.
public protocol AccountStore: DeadlineBound {
    /// Creates a family (its change counter, its family-scoped singleton's item when the model has one) and its first
    /// account, its owner; throws `username_taken`.
    func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws
    /// The account an identity (`issuer`, `subject`) signed in as, if any (protocol §14).
    func identityAccount(issuer: String, subject: String) async throws -> String?
    /// Creates the account of an identity's first exchange in a new space `space`: with `member`, as `/signup` does (its
    /// home, the account its owner); without, a space the account is only made in (it belongs to no space, and the
    /// space goes when the account does). Returns the identity's account, `created` false when another exchange made it
    /// first (nothing of this one is kept).
    func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool)
    /// Adds an account to a family, as a member, and publishes its profile as a change of the family; throws
    /// `username_taken`, and 403 `quota_exceeded` when the family has `maxMembers` members already (memberships, as an
    /// accepted invitation counts them, under the family's lock). `addedBy`, checked under that lock, must own the
    /// family (403 `forbidden` otherwise; nil: no check).
    func createAccount(_ account: NewAccount, spaceID: String, nowMs: Int64, maxMembers: Int, addedBy: String?) async throws
    /// The accounts made in the family (its signup and `POST /accounts`), oldest first, each with whether it owns the
    /// family now.
    func accounts(spaceID: String) async throws -> [AccountRecord]
    /// Deletes an account of the family in one transaction: its row (it can no longer log in), its tokens (revoked on
    /// every instance), its memberships and the invitations it minted, its items of `itemCollections`, its profile and
    /// singleton (tombstones, so every replica drops them), and its own items of the lists private to each account
    /// (`privateLists`) in every space, also those it left (deleted outright: no other account ever held them). False
    /// when none; 409 `last_owner` when it is the last owner of a space that has other members. `deletedBy` another
    /// account: checked under the family's lock, that account must own the family, and the deleted one must be a member
    /// of the family alone and not an owner (403 `forbidden` otherwise; false when it is no longer a member).
    func deleteAccount(
        accountID: String, spaceID: String, deletedBy: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool
    /// The credentials for a lower-cased username, if such an account exists.
    func credentials(usernameKey: String) async throws -> AccountCredentials?
    /// Stores a bearer token of an account by its hash; 401 `invalid_credentials` when the account is gone.
    func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws
    /// The account of an unexpired token hash, with its memberships.
    func session(tokenHash: String, nowMs: Int64) async throws -> (session: AccountSession, expiresMs: Int64)?
    /// Revokes a token at once.
    func deleteToken(hash: String) async throws
    /// Counts one login attempt against each throttle key in one atomic step (N parallel attempts count N); a key's
    /// window starts over when it began `windowMs` or more ago. Returns each key's window after counting.
    func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow]
    /// Takes back a counted attempt that succeeded or was never checked: `resetKey` (if any) starts from zero,
    /// `uncountKeys` lose one attempt.
    func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws
    /// Remembers that `key` (a username and a client address) logged in at `nowMs`; kept `LoginThrottleKeys.knownForMs`.
    func rememberLogin(key: String, nowMs: Int64) async throws
    /// When `key` last logged in, if the store still remembers it.
    func lastLogin(key: String) async throws -> Int64?
    /// An account's username and credentials, by account id (for `POST /password`).
    func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)?
    /// Replaces an account's password hash and revokes every token of it but `keepTokenHash`, in one transaction.
    func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws
}

/// Spaces, memberships and invitations (protocol §15). Every change of a membership revokes the cached sessions of
/// the space and of the account on every instance, and wakes the space's streams, which check their token again.
public protocol SpaceStore: DeadlineBound {
    /// Creates a space owned by `ownerID`: its counter, its family-scoped singleton's item when the model has one, and
    /// the owner's membership; 403 `quota_exceeded` when the account owns `limits.owned` spaces or belongs to
    /// `limits.memberships` already (counted under the account's lock).
    func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws
    /// Renames a space.
    func renameSpace(id: String, name: String) async throws
    /// The spaces of an account, in the order it joined them.
    func spaces(accountID: String) async throws -> [SpaceRecord]
    /// The members of a space, in the order they joined.
    func members(spaceID: String) async throws -> [MemberRecord]
    /// One member of a space, nil when the account is not one.
    func member(spaceID: String, accountID: String) async throws -> MemberRecord?
    /// Gives a member another role; false when the account is not a member, 409 `last_owner` when it would leave the
    /// space without an owner. `callerID` must own the space, checked under the space's lock (403 `forbidden`
    /// otherwise). Raised to owner, the account may own at most `limits.owned` spaces (403 `quota_exceeded`, counted
    /// under its account's lock). An owner made a member or reader loses the invitations it minted in the space.
    func setRole(spaceID: String, accountID: String, role: SpaceRole, by callerID: String, limits: SpaceLimits) async throws -> Bool
    /// Removes a member, with the invitations it minted in the space and its own items of the lists private to each
    /// account (`privateLists`, deleted outright: nobody else ever held them, and the space's quotas get their share
    /// back); false when the account is not a member, 409 `last_owner` when it is the space's last owner. `callerID` is
    /// the member itself (leaving) or, checked under the space's lock, an owner of it (403 `forbidden` otherwise): then
    /// no invitation of the space minted before the removal admits the account again.
    func removeMember(spaceID: String, accountID: String, by callerID: String, privateLists: [String]) async throws -> Bool
    /// Stores an invitation by the hash of its code; 403 `quota_exceeded` when the space keeps `limits.invitations`
    /// unused, unexpired ones already.
    func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws
    /// Spends one use of an unexpired invitation to make `accountID` a member of its space, as of a new version of the
    /// space's counter (its `sinceVersion`); an account already a member keeps its role and spends nothing. Nil for an
    /// unknown, used-up or expired code; 403 `quota_exceeded` when the account belongs to `limits.memberships` spaces,
    /// owns `limits.owned` (an owner code), or the space holds `limits.members`; 403 `forbidden` when an owner removed
    /// the account from the space after the code was minted.
    func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord?
    /// The unused, unexpired invitations of a space, oldest first.
    func invitations(spaceID: String, nowMs: Int64) async throws -> [InvitationRecord]
    /// Deletes the invitation of the space named `id` (`InvitationRecord.id`); false when there is none.
    func revokeInvitation(spaceID: String, id: String) async throws -> Bool
}

/// The reads of sync answers, which a pinned snapshot answers too (`SnapshotReads`) and a standby may
/// (`ReadRoutingStore`).
public protocol ItemReads: DeadlineBound {
    /// One item row (live or tombstone) of a family.
    func item(spaceID: String, key: ItemKey) async throws -> StoredItem?
    /// What `/verify` digests (protocol §11) of every live top-level item of `collections`, each collection's sorted by
    /// id (byte order), handed to `each` one at a time so that no list is held whole; returns the family's counter,
    /// from the same snapshot.
    func forEachVerifyRow(spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void) async throws -> SpaceCounter
    /// Top-level rows of `collections` changed after `since` (tombstones included), or every live row when `since`
    /// is nil, read in one snapshot with the family's counter; none, `overflowed`, past `Delta.byteBudget`.
    func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta
    /// The rows of a paginated sync (protocol §4) after `since` (nil: no date), in one snapshot.
    func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows
    /// The live items below `query.anchorID` with their children; nil when the anchor never existed.
    func page(spaceID: String, query: PageQuery) async throws -> PageRows?
}

/// Items: their reads, their writes, and the snapshots that make a group's answers agree.
public protocol ItemStore: ItemReads {
    /// Reads the row (and its parent, for a child) under the family's lock, lets `plan` decide, and stores the decided
    /// rows at the next version of the family's change counter, all in one transaction (so versions are in commit order).
    func write(
        spaceID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome
    /// Runs `body` with one pinned snapshot of the database: every read of it answers from that snapshot, so that
    /// several answers are consistent with each other (protocol §6). The pin is a value passed to what reads it, never
    /// ambient state: a call made through the store itself (a token lookup, a write) reads the database as it is.
    func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SnapshotReads) async throws -> T) async throws -> T
    /// The body of every live row of a full list, from one snapshot of its own, page by page, oldest change first
    /// (then by id): `start` gets the family's counter before any page, and the next page is read only once `page`
    /// returned.
    func streamLiveRows(
        spaceID: String, collection: String, start: @escaping @Sendable (SpaceCounter) async throws -> Void,
        page: @escaping @Sendable (LiveBodies) async throws -> Void
    ) async throws
}

/// What runs in the background: purges of tombstones, expired tokens and old throttle windows.
public protocol MaintenanceStore: DeadlineBound {
    /// Deletes tombstones last changed before `cutoffMs` and raises each affected family's horizon to the newest
    /// version purged, so that an older date of sync answers `sync: false` (protocol §8). Returns how many went.
    func purgeTombstones(cutoffMs: Int64) async throws -> Int
    /// Deletes tokens and invitations expired at `nowMs` and throttle windows begun before `throttleBeforeMs`; returns
    /// how many rows went.
    func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int
    /// Deletes the data of every space that emptied (its last member's account was deleted) before `cutoffMs`, and the
    /// space itself unless an account still names it as the space it was made in; returns how many spaces went.
    func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int
}

/// One pinned snapshot of the database (`ItemStore.withReadSnapshot`): a group's run of reads answers from it. Only a
/// snapshot reads a full list in the caller's task and reads several deltas ahead, so those calls cannot be made
/// without one.
public protocol SnapshotReads: ItemReads {
    /// The family's counter in the snapshot.
    func counter(spaceID: String) async throws -> SpaceCounter
    /// The body of every live row of a full list in the snapshot, page by page, oldest change first, read in the
    /// calling task (a group's answer streams sub-answer after sub-answer from its snapshot).
    func forEachLivePage(spaceID: String, collection: String, _ page: (LiveBodies) async throws -> Void) async throws
    /// The same snapshot, with the answers of these `delta` calls read at once, in as few statements as the backend
    /// can; a later `delta` call with the same arguments answers from them, any other reads as before. The default
    /// reads nothing ahead (SQLite: no round trips to save).
    func prefetchingDeltas(_ requests: [DeltaRequest]) async throws -> any SnapshotReads
    /// Whether `prefetchingDeltas` reads anything ahead (callers skip computing the requests otherwise).
    var prefetchesDeltas: Bool { get }
}

/// A backend's snapshot: the reads of sync answers go through a copy of its store that reads on the snapshot's
/// connection; only the pin-only reads are its own.
package protocol PinnedStoreSnapshot: SnapshotReads {
    associatedtype Pinned: ItemReads
    /// The store whose reads run on the snapshot's connection.
    var store: Pinned { get }
}

extension PinnedStoreSnapshot {
    /// A pinned snapshot reads under the deadline it was opened under (its run of reads), whoever reads it.
    package func bounded(by budget: Deadline.Budget?) -> Self { self }
    package func item(spaceID: String, key: ItemKey) async throws -> StoredItem? { try await store.item(spaceID: spaceID, key: key) }
    package func forEachVerifyRow(
        spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void
    ) async throws -> SpaceCounter {
        try await store.forEachVerifyRow(spaceID: spaceID, collections: collections, each)
    }
    package func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await store.delta(spaceID: spaceID, collections: collections, since: since)
    }
    package func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await store.pageSync(spaceID: spaceID, query: query, since: since)
    }
    package func page(spaceID: String, query: PageQuery) async throws -> PageRows? { try await store.page(spaceID: spaceID, query: query) }
}

/// How many rows a streamed read hands over at a time.
package enum StreamPaging {
    package static let pageSize = 256
    /// A page ends once its bodies reach this many bytes, whatever their count: a page of 256 of the largest rows would
    /// hold tens of megabytes per stream, twice (rows and answer chunks).
    package static let pageBytes = 1 << 20

    /// Whether a page of `count` rows and `bytes` bytes is full.
    package static func isFull(count: Int, bytes: Int) -> Bool { count >= pageSize || bytes >= pageBytes }
}

/// A page of a full list as it is answered: the stored canonical JSON of each live row, oldest change first, as bytes.
///
/// A full list copies each row's body into the answer and nothing else: on PostgreSQL each body is a slice of the row
/// the socket delivered, with no `String` made and no other column read.
public typealias LiveBodies = [ByteBuffer]

extension SnapshotReads {
    public func prefetchingDeltas(_ requests: [DeltaRequest]) async throws -> any SnapshotReads { self }
    public var prefetchesDeltas: Bool { false }
}

extension SchemaStore {
    /// Creates or upgrades the schema to the newest version.
    public func migrate() async throws { try await migrate(upTo: nil) }
}

extension AccountStore {
    /// `deleteAccount` by the account itself.
    public func deleteAccount(
        accountID: String, spaceID: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        try await deleteAccount(
            accountID: accountID, spaceID: spaceID, deletedBy: accountID, itemCollections: itemCollections, privateLists: privateLists,
            nowMs: nowMs)
    }

    /// `createAccount` with no member quota and no caller to check.
    public func createAccount(_ account: NewAccount, spaceID: String, nowMs: Int64) async throws {
        try await createAccount(account, spaceID: spaceID, nowMs: nowMs, maxMembers: .max, addedBy: nil)
    }
}
