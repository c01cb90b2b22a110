import Synchronization

/// Computes every answer of the item and sync endpoints from the store: the one place that knows the
/// protocol's delta rules. Handlers call one engine method per endpoint; the engine never sees HTTP.
public struct SyncEngine: Sendable {
    public let store: any SyncStore
    let identity: DatabaseIDCache
    let now: @Sendable () -> Int64

    public init(store: any SyncStore, now: @escaping @Sendable () -> Int64 = WallClock.nowMs) {
        self.store = store
        self.identity = DatabaseIDCache()
        self.now = now
    }

    /// This database's id, put in every date of sync (read once, after migrations created it).
    public func databaseID() async throws -> String {
        if let id = identity.value.withLock({ $0 }) { return id }
        let id = try await store.databaseID()
        identity.value.withLock { $0 = id }
        return id
    }

    /// The position a client's `date` names, or nil for a first sync (absent, or not ours).
    func position(_ date: String?, _ session: Session) async throws -> Int64? {
        if case .position(let version) = try SyncToken.parse(date, databaseID: try await databaseID(), familyID: session.familyID) {
            return version
        }
        return nil
    }

    /// The date of sync naming `version` of the caller's family.
    func token(_ version: Int64, _ session: Session) async throws -> String {
        SyncToken(databaseID: try await databaseID(), familyID: session.familyID, version: version).string
    }

    /// The family's current date of sync and counter value (for live change notices).
    public func currentPosition(_ session: Session) async throws -> (date: String, version: Int64) {
        let delta = try await store.delta(familyID: session.familyID, collections: [], since: nil)
        return (try await token(delta.version, session), delta.version)
    }

    /// The position a client's `date` names (nil: absent or not answerable here); throws `invalid_date` when malformed.
    public func changesSince(_ date: String?, _ session: Session) async throws -> Int64? {
        try await position(date, session)
    }

    /// True when an `If-None-Match` header names this date of sync.
    static func matches(_ ifNoneMatch: String?, date: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return EntityTags.list(ifNoneMatch).contains("\"\(date)\"")
    }

    static func checkID(_ id: String) throws {
        guard ItemID.isValid(id) else {
            throw SyncError.invalidID("An id is 1 to 64 characters of A-Z a-z 0-9 . _ : - (not \".\" or \"..\").")
        }
    }
}

/// Remembers the database id once read.
final class DatabaseIDCache: Sendable {
    let value = Mutex<String?>(nil)
}
