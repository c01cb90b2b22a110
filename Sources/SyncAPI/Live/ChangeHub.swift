import Synchronization

/// One watcher per instance (design: "One watcher per instance"): live change streams wait here for their family,
/// and one source per instance wakes them — the write path itself on SQLite, one PostgreSQL `LISTEN` connection on
/// PostgreSQL (writes `NOTIFY` in their transaction, so every instance hears every write at its commit). An idle
/// stream costs no database work at all.
public final class ChangeHub: Sendable {
    /// Changed in place only (`state.families[family]?.…`): a copy taken out of the dictionary and written back would
    /// copy its `waiters` whole at every wait and every wake, which made each of N streams of one family cost O(N).
    private struct Family {
        var generation: UInt64 = 0
        /// The highest counter value a notice named while streams followed the family.
        var version: Int64?
        /// The history that value is on (`SpaceLineage`): a value on another history replaces it, whatever its size.
        var history = ""

        /// Takes a counter value heard or read: the higher on the same history, the newer on another (a failover:
        /// the new line's counter may be below what the lost one reached).
        mutating func take(_ heard: Int64, history heardHistory: String) {
            if let version, history == heardHistory {
                self.version = max(version, heard)
            } else {
                version = heard
                history = heardHistory
            }
        }
        var subscribers = 0
        var waiters: [Int: Waiter] = [:]
    }

    /// A stream waiting for its family, and the timer of its wait: cancelled when the stream wakes, so that nothing
    /// stays armed for up to the recheck interval. The timers are the application's wheel's, not event-loop timers:
    /// cancelling an event-loop timer searches its loop's whole timer heap, so a notice waking N streams would cost
    /// O(N²).
    private struct Waiter {
        /// A stream of one family: resumed with the generation.
        var continuation: CheckedContinuation<UInt64, Never>?
        /// A stream of several families, filed under each of them: the first notice wakes it (`wait(any:timeout:)`).
        var shared: SharedWake?
        var timer: TimerWheel.Handle?

        func wake(_ generation: UInt64, _ timers: TimerWheel) {
            if let timer { timers.cancel(timer) }
            continuation?.resume(returning: generation)
            shared?.wake()
        }
    }

    private let state = Mutex<(families: [String: Family], nextWaiter: Int)>(([:], 0))
    /// Sessions of recent tokens; the hub's revocation notices keep it exact.
    public let sessions: SessionCache
    /// Each space's counter as last heard, which answers deltas at it with no read; the hub's notices keep it exact.
    public let counters: HeardCounters
    /// The time limits of the waits.
    let timers: TimerWheel

    /// `revocationsLive`: whether revocations reach the hub from the start (SQLite's in-process write path); on
    /// PostgreSQL the listener turns them on once it listens. `timers`: the application's wheel.
    public init(revocationsLive: Bool = true, timers: TimerWheel) {
        sessions = SessionCache(live: revocationsLive)
        counters = HeardCounters(live: revocationsLive)
        self.timers = timers
    }

    /// Notices flow to this instance (or may be missed from now on): the session cache and the heard counters are
    /// trusted only while they do, and start empty either way.
    public func setLive(_ live: Bool) {
        sessions.setLive(live)
        counters.setLive(live)
    }

    /// A token of the family was revoked (logout, password change): its cached sessions go first, then its streams
    /// wake and re-check their token.
    public func revokeTokens(family: String) {
        sessions.revoke(family: family)
        notify(family: family)
    }

    /// Starts following `family`; returns the generation to pass to the first `wait`. Balance with `unsubscribe`.
    public func subscribe(family: String) -> UInt64 {
        state.withLock { state in
            state.families[family, default: Family()].subscribers += 1
            return state.families[family]!.generation
        }
    }

    public func unsubscribe(family: String) {
        state.withLock { state in
            state.families[family]?.subscribers -= 1
            Self.forgetIfIdle(family, in: &state.families)
        }
    }

    /// Drops the family's entry once nothing follows it: no subscriber, no waiter.
    private static func forgetIfIdle(_ family: String, in families: inout [String: Family]) {
        guard let entry = families[family], entry.subscribers <= 0, entry.waiters.isEmpty else { return }
        families[family] = nil
    }

    /// The family's data (or one of its tokens) changed: wake its streams. `version`, when the notice carries it, is
    /// the counter value the write committed, on `history`: a woken stream then needs no database read to name the
    /// new date.
    public func notify(family: String, version: Int64? = nil, history: String = "") {
        if let version { counters.heard(space: family, version: version, history: history) }
        let woken: ([Int: Waiter], UInt64) = state.withLock { state in
            guard state.families[family] != nil else { return ([:], 0) }
            state.families[family]!.generation &+= 1
            if let version { state.families[family]!.take(version, history: history) }
            let waiters = state.families[family]!.waiters
            state.families[family]!.waiters = [:]
            return (waiters, state.families[family]!.generation)
        }
        for waiter in woken.0.values { waiter.wake(woken.1, timers) }
    }

    /// The highest counter value notified for `family` while it had streams, if any.
    public func latestVersion(family: String) -> Int64? {
        state.withLock { $0.families[family]?.version }
    }

    /// `latestVersion` and the history it is on.
    public func latest(family: String) -> (version: Int64, history: String)? {
        state.withLock { state in state.families[family].flatMap { family in family.version.map { ($0, family.history) } } }
    }

    /// A stream read the family's counter at `version` from the database: the hub's version is at least that, so that a
    /// catch-up (`catchUp`) wakes the family only when its counter moves past what its streams have seen.
    public func observe(family: String, version: Int64, history: String = "") {
        state.withLock { state in
            guard state.families[family] != nil else { return }
            state.families[family]!.take(version, history: history)
        }
    }

    /// The keys followed now (families, and the account keys of streams of all spaces).
    public var followedKeys: [String] { state.withLock { Array($0.families.keys) } }

    /// What the listener read when it may have missed notices (suspected or replaced): the counter of each followed
    /// family, in one statement. Wakes only the families whose counter passed the version their streams have seen
    /// (or that have seen none yet), with that counter, so a woken stream names its date with no read of its own;
    /// with `wakeUnread`, the followed keys `counters` has no row for too (account keys: a missed membership notice).
    /// Returns how many keys it woke.
    @discardableResult
    public func catchUp(_ counters: [String: Int64], histories: [String: String] = [:], wakeUnread: Bool) -> Int {
        let moved: [(String, Int64?)] = state.withLock { state in
            state.families.compactMap { key, family in
                guard let counter = counters[key] else { return wakeUnread ? (key, nil) : nil }
                let moved = counter > (family.version ?? .min) || family.history != histories[key, default: ""]
                return moved ? (key, counter) : nil
            }
        }
        for (key, counter) in moved { notify(family: key, version: counter, history: histories[key, default: ""]) }
        return moved.count
    }

    /// Wakes every stream (after the listener reconnected: notices may have been missed meanwhile).
    public func notifyAll() {
        counters.forgetAll()
        let families = state.withLock { Array($0.families.keys) }
        for family in families { notify(family: family) }
    }

    /// Returns the family's generation as soon as it differs from `seen`, or after `timeout`, or when the task is
    /// cancelled, or once `stop` is stopped, whichever comes first.
    public func wait(family: String, seen: UInt64, timeout: Duration, stop: WaitStop? = nil) async -> UInt64 {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<UInt64, Never>) in
                let current: UInt64? = state.withLock { state in
                    let generation = state.families[family]?.generation ?? 0
                    guard generation == seen, !Task.isCancelled, stop?.arm({ self.release(family: family, waiter: id) }) != false else {
                        return generation
                    }
                    state.families[family, default: Family()].waiters[id] = Waiter(continuation: continuation)
                    return nil
                }
                if let current {
                    continuation.resume(returning: current)
                    return
                }
                let timer = timers.schedule(in: timeout) { self.release(family: family, waiter: id) }
                // Kept with its waiter, or cancelled at once when the waiter was woken before (outside the lock).
                let kept = state.withLock { state in
                    guard state.families[family]?.waiters[id] != nil else { return false }
                    state.families[family]?.waiters[id]?.timer = timer
                    return true
                }
                if !kept { timers.cancel(timer) }
            }
        } onCancel: {
            release(family: family, waiter: id)
        }
    }

    /// The family's generation now (0 before any notice while followed).
    public func generation(family: String) -> UInt64 {
        state.withLock { $0.families[family]?.generation ?? 0 }
    }

    /// Returns as soon as one of the families' generations differs from the one `seen` names, or after `timeout`, or
    /// when the task is cancelled, or once `stop` is stopped (a stream of several spaces, `GET /changes?spaces=all`):
    /// one waiter filed under every family, with one timer, whichever family's notice comes first.
    public func wait(any seen: [String: UInt64], timeout: Duration, stop: WaitStop? = nil) async {
        if seen.count == 1, let (family, generation) = seen.first {
            _ = await wait(family: family, seen: generation, timeout: timeout, stop: stop)
            return
        }
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let wake = SharedWake(timers: timers)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                wake.arm(continuation)
                let filed = state.withLock { state -> Bool in
                    guard !Task.isCancelled, seen.allSatisfy({ (state.families[$0.key]?.generation ?? 0) == $0.value }),
                        stop?.arm({ wake.wake() }) != false
                    else { return false }
                    for family in seen.keys { state.families[family, default: Family()].waiters[id] = Waiter(shared: wake) }
                    return true
                }
                guard filed else { return wake.wake() }
                wake.setTimer(timers.schedule(in: timeout) { wake.wake() })
            }
        } onCancel: {
            wake.wake()
        }
        // Unfiled from the families no notice emptied.
        state.withLock { state in
            for family in seen.keys {
                guard state.families[family]?.waiters.removeValue(forKey: id) != nil else { continue }
                Self.forgetIfIdle(family, in: &state.families)
            }
        }
        wake.cancelTimer()
    }

    /// Resumes one waiter with the current generation, if it is still waiting.
    private func release(family: String, waiter id: Int) {
        let woken: (Waiter, UInt64)? = state.withLock { state in
            guard let waiter = state.families[family]?.waiters.removeValue(forKey: id) else { return nil }
            let generation = state.families[family]?.generation ?? 0
            Self.forgetIfIdle(family, in: &state.families)
            return (waiter, generation)
        }
        if let (waiter, generation) = woken { waiter.wake(generation, timers) }
    }

    /// Families with streams (for tests and metrics).
    public var followedFamilies: Int { state.withLock { $0.families.count } }

    /// Open subscriptions, over every family (for tests and metrics: zero once every stream has ended).
    public var subscriptions: Int { state.withLock { $0.families.values.reduce(0) { $0 + $1.subscribers } } }

    /// Streams waiting for a notice now, over every family (for tests).
    var waiting: Int { state.withLock { $0.families.values.reduce(0) { $0 + $1.waiters.count } } }
}

/// Ends a stream's waits on the hub at once and for good: a stream stops it when the instance begins a graceful
/// shutdown, or when its client goes away. One per stream, registered once for the stream's life
/// (`withGracefulShutdownHandler`), not once per wait: the shutdown manager keeps its handlers in an array and removes
/// each by a linear search, so a registration per wait would make every wake of N streams cost O(N).
public final class WaitStop: Sendable {
    private let state = Mutex<(stopped: Bool, wake: (@Sendable () -> Void)?)>((false, nil))

    public init() {}

    /// Stops every wait from now on, and wakes the one filed now, if any.
    public func stop() {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            state.stopped = true
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }

    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Records how to wake the wait being filed; false when stopped already (the wait then returns at once). Called
    /// under the hub's lock; `stop` calls `wake` outside its own lock, so the two locks never nest the other way.
    fileprivate func arm(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.wake = wake
            return true
        }
    }
}

/// The wake-up of a stream waiting on several families: resumed once, by the first notice, its timer or its
/// cancellation, whichever comes first (a cancellation may come before the continuation is armed).
final class SharedWake: Sendable {
    private enum Phase {
        case waiting(CheckedContinuation<Void, Never>?)
        case woken
    }

    private let state = Mutex<(phase: Phase, timer: TimerWheel.Handle?)>((.waiting(nil), nil))
    private let timers: TimerWheel

    init(timers: TimerWheel) {
        self.timers = timers
    }

    func arm(_ continuation: CheckedContinuation<Void, Never>) {
        let woken = state.withLock { state -> Bool in
            guard case .waiting = state.phase else { return true }
            state.phase = .waiting(continuation)
            return false
        }
        if woken { continuation.resume() }
    }

    func wake() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard case .waiting(let continuation) = state.phase else { return nil }
            state.phase = .woken
            return continuation
        }
        continuation?.resume()
    }

    func setTimer(_ timer: TimerWheel.Handle) {
        let keep = state.withLock { state -> Bool in
            guard case .waiting = state.phase else { return false }
            state.timer = timer
            return true
        }
        if !keep { timers.cancel(timer) }
    }

    func cancelTimer() {
        if let timer = state.withLock({ $0.timer }) { timers.cancel(timer) }
    }
}
