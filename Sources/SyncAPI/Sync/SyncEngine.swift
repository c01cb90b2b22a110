import Synchronization

/// Where the reads of a request go when it is part of a group (protocol §6).
public enum ReadSource: Sendable {
    /// The pinned snapshot of the group's run of reads; `keepsRanges`: whether its delta answers are kept for the hub
    /// (only a run whose every call a later run could answer from them: `SyncEngine.heardRun`).
    case snapshot(any SnapshotReads, keepsRanges: Bool = false)
    /// The primary, never a standby: a read after a write of the same group must see it (§6, §13).
    case primary
    /// A group's run of sync reads answered at once from what the change hub heard, all at one counter value (as a
    /// snapshot would answer them): each answer by `SyncEngine.heardKey` of its endpoint and date.
    case heard([String: SyncAnswer])
}

/// Computes every answer of the item and sync endpoints from the store: the one place that knows the
/// protocol's delta rules. Handlers call one engine method per endpoint; the engine never sees HTTP.
public struct SyncEngine: Sendable {
    /// Writes, streamed full lists, the database's identity and live positions: the primary.
    public private(set) var store: any EngineStore
    /// Where the reads of sync answers go: the store, or a router that may answer them from a hot standby.
    private(set) var routedReads: any ItemReads
    /// The pinned snapshot a group's run of reads answers from (nil: each read from its own).
    private(set) var snapshot: (any SnapshotReads)?
    /// Where this engine's reads of sync answers go.
    var reads: any ItemReads { snapshot ?? routedReads }
    /// Whether the pinned snapshot's delta answers are kept (`ReadSource.snapshot`).
    private(set) var snapshotKeepsRanges = false
    /// The answers of a group's run of reads given by the hub (`ReadSource.heard`), by `heardKey`.
    private(set) var heardAnswers: [String: SyncAnswer]?
    /// Whether `routedReads` is the primary (no hot standby may answer them): only its counters may be recorded in
    /// `heard` (a standby's may be behind commits whose notices came before the listener listened).
    private(set) var readsFromPrimary: Bool
    /// What every copy of the engine shares: one reference, so the copy a request binds to its budget (and each call
    /// of a group its reads) costs one retain for these, not eleven.
    private let parts: Parts

    private final class Parts: Sendable {
        let heard: HeardCounters?
        let identity = DatabaseIDCache()
        let now: @Sendable () -> Int64
        let streamDeadline: Duration
        let producers: AnswerProducers
        let quotas: FamilyQuotas
        let snapshots: SnapshotBudget
        let collections: CollectionRegistry
        let pageBytes: Int
        let timers: TimerWheel
        let fullLists: FullListCache

        init(
            heard: HeardCounters?, now: @escaping @Sendable () -> Int64, streamDeadline: Duration, producers: AnswerProducers,
            quotas: FamilyQuotas, snapshots: SnapshotBudget, collections: CollectionRegistry, pageBytes: Int, timers: TimerWheel,
            fullLists: FullListCache
        ) {
            (self.heard, self.now, self.streamDeadline, self.producers, self.quotas) = (heard, now, streamDeadline, producers, quotas)
            (self.snapshots, self.collections, self.pageBytes, self.timers, self.fullLists) = (snapshots, collections, pageBytes, timers, fullLists)
        }
    }

    /// Each space's counter as the change hub heard it: a delta at it is answered with no read (nil: every delta reads).
    public var heard: HeardCounters? { parts.heard }
    var identity: DatabaseIDCache { parts.identity }
    var now: @Sendable () -> Int64 { parts.now }
    /// How long a streamed answer may wait for its database: for its snapshot (a 503 past it), then for each chunk
    /// (the answer ends, broken, past it).
    var streamDeadline: Duration { parts.streamDeadline }
    /// Where the producers of streamed answers run (the application's service).
    public var producers: AnswerProducers { parts.producers }
    /// What a family may keep; a write past it answers 403 `quota_exceeded`.
    public var quotas: FamilyQuotas { parts.quotas }
    /// Answers that hold a snapshot while their client downloads them (429 past it).
    public var snapshots: SnapshotBudget { parts.snapshots }
    /// The collections of the model this engine serves.
    public var collections: CollectionRegistry { parts.collections }
    /// The bytes of item bodies a page answer's list holds, and as many its children (`PageBytes`).
    var pageBytes: Int { parts.pageBytes }
    /// The application's clock: the time limits of streamed answers.
    public var timers: TimerWheel { parts.timers }
    /// Full-list answers kept by date (`FullListCache`).
    public var fullLists: FullListCache { parts.fullLists }

    /// `reads`: where the reads of sync answers go when they may leave the store (`OpenedStore.reads`); the store
    /// itself when nil. `readsFromPrimary`: whether `reads` only ever reads the primary (default: when it is nil).
    public init(
        store: any EngineStore, reads: (any ItemReads)? = nil, producers: AnswerProducers, now: @escaping @Sendable () -> Int64 = WallClock.nowMs,
        streamStartDeadline: Duration = .seconds(10), quotas: FamilyQuotas = FamilyQuotas(), snapshots: SnapshotBudget = SnapshotBudget(),
        collections: CollectionRegistry, pageBytes: Int = PageQuery.defaultByteBudget, timers: TimerWheel = .shared,
        fullLists: FullListCache = FullListCache(), heard: HeardCounters? = nil, readsFromPrimary: Bool? = nil
    ) {
        self.readsFromPrimary = readsFromPrimary ?? (reads == nil)
        self.store = store
        self.routedReads = reads ?? store
        self.parts = Parts(
            heard: heard, now: now, streamDeadline: streamStartDeadline, producers: producers, quotas: quotas, snapshots: snapshots,
            collections: collections, pageBytes: pageBytes, timers: timers, fullLists: fullLists)
    }

    /// The same engine, its store calls under `budget` (a request's deadline): its writes ask that budget before they
    /// begin, and its reads run inline under it. A pinned snapshot reads under the deadline it was opened under.
    public func bounded(by budget: Deadline.Budget?) -> SyncEngine {
        var engine = self
        engine.store = store.bounded(by: budget)
        engine.routedReads = routedReads.bounded(by: budget)
        return engine
    }

    /// The same engine reading from `source` (nil: as it is).
    public func reading(_ source: ReadSource?) -> SyncEngine {
        var engine = self
        switch source {
        case nil: break
        case .snapshot(let snapshot, let keepsRanges):
            engine.snapshot = snapshot
            engine.snapshotKeepsRanges = keepsRanges
        case .primary:
            engine.routedReads = store
            engine.readsFromPrimary = true
        case .heard(let answers): engine.heardAnswers = answers
        }
        return engine
    }

    /// This database's id, put in every date of sync, and its model generations (read once, after migrations and
    /// the model record).
    public func databaseIdentity() async throws -> DatabaseIdentityValue {
        if let identity = identity.value.withLock({ $0 }) { return identity }
        let id = try await store.databaseID()
        let generations = try await store.modelGenerations().map { try ModelGenerations(json: $0) } ?? ModelGenerations()
        let value = DatabaseIdentityValue(id: id, generations: generations)
        identity.value.withLock { $0 = value }
        return value
    }

    /// The position a client's `date` names for `collections`, or nil for a first sync: absent, not ours, issued before
    /// the caller last joined the space, or before a breaking model change that touched one of them
    /// (`ModelGenerations`; an empty list checks none). Whether the position is on the space's line is known only with
    /// the read (`Delta.answers`, `DatePosition.isHeld`).
    func position(_ date: String?, _ session: Session, for collections: [String] = []) async throws -> DatePosition? {
        let identity = try await databaseIdentity()
        // Generations are the model's: a private list's storage key (`notes~<account>`) counts as its collection.
        let names = collections.contains { $0.contains("~") } ? collections.map { String(CollectionSpec.publicName($0)) } : collections
        guard case .position(let version, let generation, let history) = try SyncToken.parse(date, databaseID: identity.id, spaceID: session.spaceID),
            generation >= identity.generations.floor(names), generation <= identity.generations.current,
            // Issued before the caller last joined the space: it may have missed deletes while it was out.
            version >= session.sinceVersion
        else { return nil }
        return DatePosition(version: version, history: history)
    }

    /// The date of sync naming `version` of the caller's family, on the history `lineage` names.
    func token(_ version: Int64, _ lineage: SpaceLineage, _ session: Session) async throws -> String {
        try await databaseIdentity().token(spaceID: session.spaceID, version: version, history: lineage.history)
    }

    /// The date of sync naming counter value `version` of the caller's family on `history` (a live notice's new date).
    public func date(atVersion version: Int64, history: String, _ session: Session) async throws -> String {
        try await databaseIdentity().token(spaceID: session.spaceID, version: version, history: history)
    }

    /// The family's current date of sync, counter value, purge horizon and line (for live change notices).
    public func currentPosition(_ session: Session) async throws -> LivePosition {
        let delta = try await store.delta(spaceID: session.spaceID, collections: [], since: nil)
        return LivePosition(date: try await token(delta.version, delta.lineage, session), version: delta.version, delta: delta)
    }

    /// Where a change stream starts (protocol §9): the position the client's `date` names, or nil when there is
    /// none or it cannot be answered exactly (another database, above the counter, older than the purge horizon, off
    /// the space's line), so that the first notice goes out at once and the app runs a full sync. Throws
    /// `invalid_date` when malformed.
    ///
    /// `heard`: the space's counter as the instance's change hub has it, when the hub is live (every commit since it
    /// followed the space was heard): then no read. The start needs only whether the date is the counter's value on
    /// its history (nothing to tell yet) or not (a change at once): a date below the counter gets one either way,
    /// and the counter is never below the purge horizon.
    public func changesSince(
        _ date: String?, _ session: Session, heard: (version: Int64, history: String)? = nil
    ) async throws -> (since: DatePosition?, now: LivePosition) {
        let since = try await position(date, session)
        if let heard, let since, since.history == heard.history, since.version <= heard.version {
            let lineage = SpaceLineage(history: heard.history, forkFrom: "", forkVersion: 0)
            let now = LivePosition(
                date: try await token(heard.version, lineage, session), version: heard.version,
                delta: Delta(version: heard.version, horizon: 0, rows: [:], lineage: lineage))
            return (since, now)
        }
        let now = try await currentPosition(session)
        guard let since, now.delta.answers(since) else { return (nil, now) }
        return (since, now)
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
    let value = Mutex<DatabaseIdentityValue?>(nil)
}

/// What every date of sync of this database carries: its id and its model generation.
public struct DatabaseIdentityValue: Sendable {
    public let id: String
    public let generations: ModelGenerations

    func token(spaceID: String, version: Int64, history: String) -> String {
        SyncToken(databaseID: id, spaceID: spaceID, version: version, generation: generations.current, history: history).string
    }
}

/// A space's counter as a live stream reads it: its date, value and the delta of no collection it was read from
/// (purge horizon and line).
public struct LivePosition: Sendable {
    public let date: String
    public let version: Int64
    public let delta: Delta

    /// The history the counter is on.
    public var history: String { delta.lineage.history }
}
