import Logging
import PostgresNIO
import SyncAPI
import Synchronization

/// The reads of sync answers with hot standbys (`--read-database`, protocol §13), beside the primary's store.
///
/// Only snapshot reads of sync answers (a delta, a page sync) may go to a standby; everything else (an item, a page,
/// `/verify`, and all that is not a read of an answer: writes, tokens, logins, notices, locks, quotas, media, purges,
/// migrations, full lists, groups) is the primary's. A read that
/// names version V of a family is kept from a standby only if the family's counter, read in the same statement (one
/// snapshot) as the rows, is at least V; else, or when the standby fails, it is read again on the primary. So an
/// answer is always exact, never `sync: false` because a standby lags, never a 5xx because one failed.
public struct ReadRoutingStore: ItemReads {
    /// Every write and every read that may not go to a standby.
    public let primary: PostgresStore
    /// The hot standbys, tried in turn among the healthy ones.
    public let standbys: [Standby]
    /// Where reads were answered (metrics, tests).
    public let routes: ReadRouteCounts
    /// How long a standby may take to answer one read before the primary answers it instead.
    let standbyTimeout: Duration
    let timers: TimerWheel
    private let turn: TurnCounter
    let logger: Logger

    public init(primary: PostgresStore, standbys: [Standby], standbyTimeout: Duration = .seconds(2), timers: TimerWheel, logger: Logger) {
        self.timers = timers
        self.primary = primary
        self.standbys = standbys
        self.standbyTimeout = standbyTimeout
        self.routes = ReadRouteCounts()
        self.turn = TurnCounter()
        self.logger = logger
    }

    /// The deadline this copy's reads run under (`bounded(by:)`).
    private var budget: Deadline.Budget?

    /// The primary, under this copy's deadline.
    private var bound: PostgresStore { primary.bounded(by: budget) }

    public func bounded(by budget: Deadline.Budget?) -> ReadRoutingStore {
        var store = self
        store.budget = budget
        return store
    }

    /// The next healthy standby in turn, nil when none is.
    func nextStandby() -> Standby? {
        guard !standbys.isEmpty else { return nil }
        let start = turn.next()
        for offset in 0..<standbys.count {
            let standby = standbys[(start + offset) % standbys.count]
            if standby.isHealthy { return standby }
        }
        return nil
    }

    /// Reads on a healthy standby when it has replayed `since` (the counter of its answer, `version`, is at least
    /// `since`), else on the primary.
    func routedRead<T: Sendable>(
        since: Int64?, version: @escaping @Sendable (T) -> Int64, _ read: @escaping @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let primary = self.bound
        guard let standby = nextStandby() else {
            routes.count(.primary)
            return try await read(primary)
        }
        do {
            let answer = try await StandbyTimeout.run(within: standbyTimeout, timers: timers) { [budget] in
                try await read(standby.store.bounded(by: budget))
            }
            if let since, version(answer) < since {
                // The standby has not replayed the client's date yet: the primary has.
                routes.count(.fallback)
                return try await read(primary)
            }
            routes.count(.standby)
            return answer
        } catch let error as SyncError where error.code == .unauthorized {
            // A family created after the standby's state: the primary knows it.
            routes.count(.fallback)
            return try await read(primary)
        } catch {
            if Task.isCancelled { throw error }
            if standby.setHealthy(false) {
                logger.warning(
                    "read database left out after a failed read; reads go to the primary",
                    metadata: ["standby": "\(standby.name)", "error": "\(String(reflecting: error))"])
            }
            routes.count(.fallback)
            return try await read(primary)
        }
    }

    public func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta {
        // The counter alone is a live stream's position (protocol §9): notices are the primary's, and a stream must
        // never take a client's date for one the server never reached because a standby lags.
        if collections.isEmpty { return try await bound.delta(spaceID: spaceID, collections: collections, since: since) }
        return try await routedRead(since: since, version: { $0.version }) { store in
            try await store.delta(spaceID: spaceID, collections: collections, since: since)
        }
    }

    public func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await routedRead(since: since, version: { $0.version }) { store in
            try await store.pageSync(spaceID: spaceID, query: query, since: since)
        }
    }

    /// A read that names no state to check a standby against: the primary's.
    public func item(spaceID: String, key: ItemKey) async throws -> StoredItem? { try await bound.item(spaceID: spaceID, key: key) }
    public func page(spaceID: String, query: PageQuery) async throws -> PageRows? { try await bound.page(spaceID: spaceID, query: query) }
    public func forEachVerifyRow(
        spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void
    ) async throws -> SpaceCounter {
        try await bound.forEachVerifyRow(spaceID: spaceID, collections: collections, each)
    }
}

/// A round-robin position shared by copies of the store.
final class TurnCounter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max }
}
