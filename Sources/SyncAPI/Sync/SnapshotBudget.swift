import NIOCore
import NIOPosix
import Synchronization

/// The budget of answers that hold a database snapshot while their client downloads them (security audit H6, code
/// review D4): full lists streamed from their snapshot, and groups whose run of reads streams from its pinned one.
///
/// Such an answer keeps its snapshot (on PostgreSQL a pooled connection, on SQLite a connection and the WAL) for as
/// long as its client takes to read it, so slow phones could otherwise take every pooled connection and delay every
/// other family's requests. At most `perAccount` of them per account (past it: 429 `too_many_requests` at once) and
/// `perInstance` in all: past that a new one waits, first come first served, for at most `wait` (a fast answer holds
/// its place for milliseconds), then answers 429. Nothing is taken before the place: a refused answer costs nothing.
/// The instance budget stays below the PostgreSQL pool's size, so ordinary requests always find a connection.
public final class SnapshotBudget: Sendable {
    public let perAccount: Int
    public let perInstance: Int
    public let wait: Duration

    private struct Waiter {
        let id: Int
        let accountID: String
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var total = 0
        var byAccount: [String: Int] = [:]
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Mutex(State())

    public init(perAccount: Int = 4, perInstance: Int = 8, wait: Duration = .seconds(2)) {
        self.perAccount = max(1, perAccount)
        self.perInstance = max(1, perInstance)
        self.wait = wait
    }

    /// Takes one answer's place for `accountID`, given back by the lease (once) or, at the latest, when it is freed.
    public func lease(_ accountID: String) async throws -> SnapshotLease {
        enum Decision { case granted, refusedAccount, wait(Int) }
        let decision = state.withLock { state -> Decision in
            guard state.byAccount[accountID, default: 0] < perAccount else { return .refusedAccount }
            // Counted for the account at once (a waiting answer is one of its answers too).
            state.byAccount[accountID, default: 0] += 1
            if state.total < perInstance && state.waiters.isEmpty {
                state.total += 1
                return .granted
            }
            state.nextID += 1
            return .wait(state.nextID)
        }
        switch decision {
        case .granted:
            return SnapshotLease(budget: self, accountID: accountID)
        case .refusedAccount:
            throw SyncError.tooManyRequests(
                retryAfter: 5, detail: "This account is downloading \(perAccount) answers already; retry when one is done.")
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
                let placeFree = state.withLock { state -> Bool in
                    if state.total < perInstance && state.waiters.isEmpty {
                        state.total += 1
                        return true
                    }
                    state.waiters.append(Waiter(id: id, accountID: accountID, continuation: continuation))
                    return false
                }
                if placeFree {
                    continuation.resume()
                    return
                }
                let expiry = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(wait.wholeNanoseconds)) {
                    self.expire(id)
                }
                timer.withLock { $0 = expiry }
            }
            return SnapshotLease(budget: self, accountID: accountID)
        }
    }

    /// A waiter whose time is up: refused, its account's count given back.
    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiters.remove(at: index)
            Self.uncount(waiter.accountID, &state)
            return waiter
        }
        waiter?.continuation.resume(
            throwing: SyncError.tooManyRequests(
                retryAfter: 5, detail: "This server is sending \(perInstance) answers already; retry in a moment."))
    }

    /// A place given back: handed to the first waiter, else freed.
    fileprivate func giveBack(_ accountID: String) {
        let next = state.withLock { state -> Waiter? in
            Self.uncount(accountID, &state)
            if state.waiters.isEmpty {
                state.total -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }

    private static func uncount(_ accountID: String, _ state: inout State) {
        let left = state.byAccount[accountID, default: 1] - 1
        state.byAccount[accountID] = left > 0 ? left : nil
    }

    /// Answers holding a snapshot now (for metrics and tests).
    public var count: Int { state.withLock { $0.total } }
}

/// One answer's place in the `SnapshotBudget`.
public final class SnapshotLease: Sendable {
    let budget: SnapshotBudget
    let accountID: String
    private let released = Atomic(false)

    fileprivate init(budget: SnapshotBudget, accountID: String) {
        self.budget = budget
        self.accountID = accountID
    }

    /// Gives the place back (once; later calls do nothing).
    public func release() {
        if !released.exchange(true, ordering: .relaxed) { budget.giveBack(accountID) }
    }

    deinit { release() }
}
