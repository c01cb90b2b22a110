import Synchronization

/// The budget of answers that hold a database snapshot while their client downloads them: full lists streamed from
/// their snapshot, and groups whose run of reads streams from its pinned one.
///
/// Such an answer keeps its snapshot (on PostgreSQL a pooled connection, on SQLite a connection and the WAL) for as
/// long as its client takes to read it, so slow phones could otherwise take every pooled connection and delay every
/// other family's requests. At most `perAccount` of them per account and `perFamily` per family (past either: 429
/// `too_many_requests` at once), and `perInstance` in all: past that a new one waits, first come first served, for at
/// most `wait` (a fast answer holds its place for milliseconds), then answers 429. Nothing is taken before the place:
/// a refused answer costs nothing. The instance budget stays below the PostgreSQL pool's size, so ordinary requests
/// always find a connection.
///
/// A place is not kept at any pace (a few slow readers would otherwise hold every place for as long as they read): when
/// an answer has to wait, the slowest holder that has held its place for `pace.grace` and read less than
/// `pace.minimumRate` bytes a second on average is cut (its stream cancelled, its client gets a broken answer and asks
/// again), and the waiter takes its place. A slow phone alone keeps its answer as long as it reads.
///
/// Nor is a place kept against a family that holds none: when every holder keeps the pace, a waiter of a family with
/// no place cuts the slowest holder (past its grace) of the family holding the most places, two at least, and a freed
/// place goes to the first waiter of a family with none before any other. Two families reading at the pace could
/// otherwise hold every place of the instance, each within its share, and every other family got 429 (issue 53).
public final class SnapshotBudget: Sendable {
    public let perAccount: Int
    public let perFamily: Int
    public let perInstance: Int
    public let wait: Duration
    public let pace: Pace

    /// The pace below which a holder gives its place up to a waiting answer.
    public struct Pace: Sendable {
        /// Bytes a second, averaged over the whole hold.
        public var minimumRate: Int
        /// How long a holder reads before its pace is judged (a phone's first round trips, TCP's slow start).
        public var grace: Duration

        public init(minimumRate: Int = 64 * 1024, grace: Duration = .seconds(10)) {
            self.minimumRate = max(0, minimumRate)
            self.grace = grace
        }
    }

    /// What carries out the state's actions: the continuation of each waiter, its wait's timer, and the pace and cut of
    /// each tracked answer.
    private struct Effects {
        var state: SnapshotBudgetState
        var nextID = 0
        var continuations: [Int: CheckedContinuation<Void, any Error>] = [:]
        var timers: [Int: TimerWheel.Handle] = [:]
        var trackers: [Int: (delivered: @Sendable () -> Int, cut: @Sendable () -> Void)] = [:]
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let effects: Mutex<Effects>
    /// The application's clock: the time of each event, and the timer of each wait.
    private let timers: TimerWheel

    public init(
        perAccount: Int = 4, perFamily: Int? = nil, perInstance: Int = 8, wait: Duration = .seconds(2), pace: Pace = Pace(),
        timers: TimerWheel = .shared
    ) {
        self.perAccount = max(1, perAccount)
        self.perInstance = max(1, perInstance)
        // By default a family may take half the places (at least an account's): others always find some.
        self.perFamily = max(1, perFamily ?? max(self.perAccount, self.perInstance / 2))
        self.wait = wait
        self.pace = pace
        self.timers = timers
        self.effects = Mutex(
            Effects(state: SnapshotBudgetState(perAccount: self.perAccount, perFamily: self.perFamily, perInstance: self.perInstance, pace: pace)))
    }

    /// Takes one answer's place for `accountID` of `spaceID`, given back by the lease (once) or, at the latest, when
    /// it is freed.
    public func lease(_ accountID: String, family spaceID: String) async throws -> SnapshotLease {
        let owner = SnapshotBudgetState.Owner(account: accountID, family: spaceID)
        let (id, action) = effects.withLock { effects -> (Int, SnapshotBudgetState.LeaseAction) in
            effects.nextID += 1
            return (effects.nextID, effects.state.lease(effects.nextID, owner, at: timers.now))
        }
        switch action {
        case .granted:
            return SnapshotLease(budget: self, id: id)
        case .refusedAccount:
            throw SyncError.tooManyRequests(
                retryAfter: 5, detail: "This account is downloading \(perAccount) answers already; retry when one is done.")
        case .refusedFamily:
            throw SyncError.tooManyRequests(
                retryAfter: 5, detail: "This family is downloading \(perFamily) answers already; retry when one is done.")
        case .mustWait:
            try await withCheckedThrowingContinuation { continuation in
                let (action, cut) = effects.withLock { effects -> (SnapshotBudgetState.QueueAction, (@Sendable () -> Void)?) in
                    let trackers = effects.trackers
                    let action = effects.state.queue(id, owner, at: timers.now) { trackers[$0]?.delivered() ?? Int.max }
                    guard case .queued(let cut) = action else { return (action, nil) }
                    effects.continuations[id] = continuation
                    // The wheel's timer, dropped when the place comes first (a cancelled `Task.sleep` would stay
                    // queued for the whole wait); armed under the lock, so that the place cannot come before it.
                    effects.timers[id] = timers.schedule(in: wait) { self.expire(id) }
                    return (action, cut.flatMap { effects.trackers.removeValue(forKey: $0)?.cut })
                }
                if action == .granted { continuation.resume() }
                // Cut outside the lock: its stream's cancellation gives the place back, to the first waiter.
                cut?()
            }
            return SnapshotLease(budget: self, id: id)
        }
    }

    /// The place of one of `session`'s answers.
    public func lease(for session: Session) async throws -> SnapshotLease {
        try await lease(session.accountID, family: session.spaceID)
    }

    /// A waiter whose time is up: refused, its account's and family's counts given back.
    private func expire(_ id: Int) {
        let continuation = effects.withLock { effects -> CheckedContinuation<Void, any Error>? in
            effects.timers[id] = nil
            guard effects.state.expire(id) else { return nil }
            return effects.continuations.removeValue(forKey: id)
        }
        continuation?.resume(
            throwing: SyncError.tooManyRequests(
                retryAfter: 5, detail: "This server is sending \(perInstance) answers already; retry in a moment."))
    }

    /// Lets the budget judge the pace of the answer holding place `id`, and cut it when it is too slow.
    fileprivate func track(_ id: Int, delivered: @escaping @Sendable () -> Int, cut: @escaping @Sendable () -> Void) {
        effects.withLock { effects in
            guard effects.state.holders[id] != nil else { return }
            effects.state.track(id)
            effects.trackers[id] = (delivered, cut)
        }
    }

    /// A place given back: handed to the first waiter, else freed.
    fileprivate func giveBack(_ id: Int) {
        let (next, timer, drained) = effects.withLock {
            effects -> (CheckedContinuation<Void, any Error>?, TimerWheel.Handle?, [CheckedContinuation<Void, Never>]) in
            effects.trackers[id] = nil
            switch effects.state.giveBack(id, at: timers.now) {
            case .handOver(let next):
                return (effects.continuations.removeValue(forKey: next), effects.timers.removeValue(forKey: next), [])
            case .freed:
                guard effects.state.held == 0 else { return (nil, nil, []) }
                defer { effects.drained = [] }
                return (nil, nil, effects.drained)
            case .none:
                return (nil, nil, [])
            }
        }
        if let timer { timers.cancel(timer) }
        next?.resume()
        for waiter in drained { waiter.resume() }
    }

    /// Returns once no answer holds a place (at once when none does): for a test that gives every place back.
    public func drained() async {
        await withCheckedContinuation { continuation in
            let now = effects.withLock { effects -> Bool in
                guard effects.state.held > 0 else { return true }
                effects.drained.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Answers holding a snapshot now (for metrics and tests).
    public var count: Int { effects.withLock { $0.state.held } }

    /// Answers cut so far for reading below the pace while another waited (for metrics and tests).
    public var cutCount: Int { effects.withLock { $0.state.cuts } }
}

/// One answer's place in the `SnapshotBudget`.
public final class SnapshotLease: Sendable {
    let budget: SnapshotBudget
    let id: Int
    private let released = Atomic(false)

    fileprivate init(budget: SnapshotBudget, id: Int) {
        self.budget = budget
        self.id = id
    }

    /// The answer holding this place: the budget reads its pace, and cancels it when it is too slow for others to
    /// wait (`SnapshotBudget.Pace`); its cancellation gives the place back.
    public func track(_ stream: AnswerStream) {
        stream.whenCancelled { self.release() }
        budget.track(id, delivered: { [weak stream] in stream?.deliveredBytes ?? Int.max }, cut: { [weak stream] in stream?.cancel() })
    }

    /// Gives the place back (once; later calls do nothing).
    public func release() {
        if !released.exchange(true, ordering: .relaxed) { budget.giveBack(id) }
    }

    deinit { release() }
}
