import NIOCore
import NIOPosix
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

    private struct Waiter {
        let id: Int
        let owner: Owner
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// Whose answer a place or a waiter is.
    private struct Owner {
        let account: String
        let family: String
    }

    /// An answer holding a place: how much it has delivered, and how to cut it.
    private struct Holder {
        let owner: Owner
        let since: ContinuousClock.Instant
        var delivered: (@Sendable () -> Int)?
        var cut: (@Sendable () -> Void)?
    }

    private struct State {
        var total = 0
        var byAccount: [String: Int] = [:]
        var byFamily: [String: Int] = [:]
        var holders: [Int: Holder] = [:]
        var waiters: [Waiter] = []
        var nextID = 0
        var cuts = 0
    }

    private let state = Mutex(State())

    public init(perAccount: Int = 4, perFamily: Int? = nil, perInstance: Int = 8, wait: Duration = .seconds(2), pace: Pace = Pace()) {
        self.perAccount = max(1, perAccount)
        self.perInstance = max(1, perInstance)
        // By default a family may take half the places (at least an account's): others always find some.
        self.perFamily = max(1, perFamily ?? max(self.perAccount, self.perInstance / 2))
        self.wait = wait
        self.pace = pace
    }

    /// Takes one answer's place for `accountID` of `familyID`, given back by the lease (once) or, at the latest, when
    /// it is freed.
    public func lease(_ accountID: String, family familyID: String) async throws -> SnapshotLease {
        enum Decision { case granted(Int), refusedAccount, refusedFamily, wait(Int) }
        let owner = Owner(account: accountID, family: familyID)
        let decision = state.withLock { state -> Decision in
            guard state.byAccount[accountID, default: 0] < perAccount else { return .refusedAccount }
            guard state.byFamily[familyID, default: 0] < perFamily else { return .refusedFamily }
            // Counted for the account and family at once (a waiting answer is one of theirs too).
            state.byAccount[accountID, default: 0] += 1
            state.byFamily[familyID, default: 0] += 1
            state.nextID += 1
            if state.total < perInstance && state.waiters.isEmpty {
                state.total += 1
                state.holders[state.nextID] = Holder(owner: owner, since: .now)
                return .granted(state.nextID)
            }
            return .wait(state.nextID)
        }
        switch decision {
        case .granted(let id):
            return SnapshotLease(budget: self, id: id)
        case .refusedAccount:
            throw SyncError.tooManyRequests(
                retryAfter: 5, detail: "This account is downloading \(perAccount) answers already; retry when one is done.")
        case .refusedFamily:
            throw SyncError.tooManyRequests(
                retryAfter: 5, detail: "This family is downloading \(perFamily) answers already; retry when one is done.")
        case .wait(let id):
            // An event loop timer, removed when the place comes first (a cancelled `Task.sleep` would stay queued for
            // the whole wait); set once the waiter is queued, so that it always finds it.
            let timer = Mutex<Scheduled<Void>?>(nil)
            defer { timer.withLock { $0?.cancel() } }
            try await withCheckedThrowingContinuation { continuation in
                // Decided again with the queue: a place given back since the decision above, while no one was queued
                // yet, was freed, not handed over. Queued behind nobody, this waiter takes it now; otherwise every
                // newcomer would queue behind a waiter that no holder is left to serve (seen under load: every answer
                // 429 after the wait, none holding a place).
                let (placeFree, slowest) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
                    if state.total < perInstance && state.waiters.isEmpty {
                        state.total += 1
                        state.holders[id] = Holder(owner: owner, since: .now)
                        return (true, nil)
                    }
                    state.waiters.append(Waiter(id: id, owner: owner, continuation: continuation))
                    return (false, Self.takeSlowest(&state, pace: pace) ?? Self.takeFromLargestFamily(&state, pace: pace, for: owner))
                }
                if placeFree {
                    continuation.resume()
                    return
                }
                let expiry = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(wait.wholeNanoseconds)) {
                    self.expire(id)
                }
                timer.withLock { $0 = expiry }
                // Cut outside the lock: its stream's cancellation gives the place back, to the first waiter.
                slowest?()
            }
            return SnapshotLease(budget: self, id: id)
        }
    }

    /// The place of one of `session`'s answers.
    public func lease(for session: Session) async throws -> SnapshotLease {
        try await lease(session.accountID, family: session.familyID)
    }

    /// The cut of the slowest holder below the pace, taken from it so that no other waiter cuts it again; nil when
    /// every holder keeps the pace (or is still in its grace).
    private static func takeSlowest(_ state: inout State, pace: Pace) -> (@Sendable () -> Void)? {
        let now = ContinuousClock.now
        var slowest: (id: Int, rate: Double)?
        for (id, holder) in state.holders {
            guard let delivered = holder.delivered, holder.cut != nil else { continue }
            let held = now - holder.since
            guard held >= pace.grace else { continue }
            let seconds = max(Double(held.components.seconds) + Double(held.components.attoseconds) / 1e18, 1e-3)
            let rate = Double(delivered()) / seconds
            guard rate < Double(pace.minimumRate) else { continue }
            if slowest == nil || rate < slowest!.rate { slowest = (id, rate) }
        }
        guard let slowest else { return nil }
        state.cuts += 1
        defer { state.holders[slowest.id]?.cut = nil }
        return state.holders[slowest.id]?.cut
    }

    /// The cut of the slowest holder past its grace of the family holding the most places (two at least), when
    /// `waiter`'s family holds none: every family that asks gets a place before one family gets a second.
    private static func takeFromLargestFamily(_ state: inout State, pace: Pace, for waiter: Owner) -> (@Sendable () -> Void)? {
        let held = heldByFamily(state)
        guard held[waiter.family, default: 0] == 0 else { return nil }
        let now = ContinuousClock.now
        var chosen: (id: Int, places: Int, delivered: Int, since: ContinuousClock.Instant)?
        for (id, holder) in state.holders {
            guard holder.cut != nil, now - holder.since >= pace.grace else { continue }
            let places = held[holder.owner.family, default: 0]
            guard places >= 2 else { continue }
            let delivered = holder.delivered?() ?? 0
            // The family with the most places first; within it, the holder that delivered least for its time.
            if let best = chosen {
                let rate = Double(delivered) / max((now - holder.since) / .seconds(1), 1e-3)
                let bestRate = Double(best.delivered) / max((now - best.since) / .seconds(1), 1e-3)
                guard places > best.places || (places == best.places && rate < bestRate) else { continue }
            }
            chosen = (id, places, delivered, holder.since)
        }
        guard let chosen else { return nil }
        state.cuts += 1
        defer { state.holders[chosen.id]?.cut = nil }
        return state.holders[chosen.id]?.cut
    }

    /// The places each family holds now (waiters not counted).
    private static func heldByFamily(_ state: State) -> [String: Int] {
        state.holders.values.reduce(into: [:]) { $0[$1.owner.family, default: 0] += 1 }
    }

    /// A waiter whose time is up: refused, its account's and family's counts given back.
    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiters.remove(at: index)
            Self.uncount(waiter.owner, &state)
            return waiter
        }
        waiter?.continuation.resume(
            throwing: SyncError.tooManyRequests(
                retryAfter: 5, detail: "This server is sending \(perInstance) answers already; retry in a moment."))
    }

    /// Lets the budget judge the pace of the answer holding place `id`, and cut it when it is too slow.
    fileprivate func track(_ id: Int, delivered: @escaping @Sendable () -> Int, cut: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard state.holders[id] != nil else { return }
            state.holders[id]?.delivered = delivered
            state.holders[id]?.cut = cut
        }
    }

    /// A place given back: handed to the first waiter, else freed.
    fileprivate func giveBack(_ id: Int) {
        let next = state.withLock { state -> Waiter? in
            guard let holder = state.holders.removeValue(forKey: id) else { return nil }
            Self.uncount(holder.owner, &state)
            if state.waiters.isEmpty {
                state.total -= 1
                return nil
            }
            // The first waiter of a family holding no place, else the first.
            let held = Self.heldByFamily(state)
            let index = state.waiters.firstIndex { held[$0.owner.family, default: 0] == 0 } ?? 0
            let next = state.waiters.remove(at: index)
            state.holders[next.id] = Holder(owner: next.owner, since: .now)
            return next
        }
        next?.continuation.resume()
    }

    private static func uncount(_ owner: Owner, _ state: inout State) {
        let left = state.byAccount[owner.account, default: 1] - 1
        state.byAccount[owner.account] = left > 0 ? left : nil
        let familyLeft = state.byFamily[owner.family, default: 1] - 1
        state.byFamily[owner.family] = familyLeft > 0 ? familyLeft : nil
    }

    /// Answers holding a snapshot now (for metrics and tests).
    public var count: Int { state.withLock { $0.total } }

    /// Answers cut so far for reading below the pace while another waited (for metrics and tests).
    public var cutCount: Int { state.withLock { $0.cuts } }
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
