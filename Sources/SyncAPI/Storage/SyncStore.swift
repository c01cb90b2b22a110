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

    public init(id: String, version: Int64, deleted: Bool, body: String?) {
        self.id = id
        self.version = version
        self.deleted = deleted
        self.body = body
    }
}

/// What a write decided to do with the row it read under the family lock.
public enum WritePlan: Sendable {
    /// Nothing changes (identical PUT, delete of a missing item); no version is used.
    case unchanged
    /// Store this canonical JSON as the live item.
    case put(body: String)
    /// Turn the item into a tombstone.
    case delete
}

/// The result of a write: the row as it now stands, and whether the family's data moved.
public struct WriteOutcome: Sendable {
    public let item: StoredItem?
    public let changed: Bool
}

/// The rows of one collection changed after a version, read in one snapshot with the family's counter.
public struct Delta: Sendable {
    /// The family change counter in that snapshot: the position the answer brings the client to.
    public let version: Int64
    /// Tombstones at or below this version have been purged: an older position cannot be answered exactly.
    public let horizon: Int64
    /// Changed rows (live items and tombstones), oldest change first.
    public let rows: [StoredItem]
}

/// A new account to store, password already hashed.
public struct NewAccount: Sendable {
    public let id: String
    public let username: String
    public let displayName: String
    public let passwordHash: String
    /// The account's public profile, as `familysync` sends it.
    public let profileBody: String

    public init(id: String, username: String, displayName: String, passwordHash: String, profileBody: String) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.profileBody = profileBody
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

    /// Creates a family (with its change counter) and its first account; throws `username_taken`.
    func createFamily(id: String, name: String, account: NewAccount, nowMs: Int64) async throws
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
    /// Reads the row under the family's lock, lets `plan` decide, and applies the decision with the next version
    /// of the family's change counter, all in one transaction (so versions are in commit order).
    func write(
        familyID: String, key: ItemKey, nowMs: Int64, plan: @escaping @Sendable (StoredItem?) throws -> WritePlan
    ) async throws -> WriteOutcome
    /// Rows of `collection` changed after `since` (tombstones included), or every live row when `since` is nil,
    /// read in one snapshot with the family's counter.
    func delta(familyID: String, collection: String, since: Int64?) async throws -> Delta
}
