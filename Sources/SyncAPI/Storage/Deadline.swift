import Synchronization

/// A hard time bound on work that may hang (a database that stopped answering): the caller gets its answer, or
/// `onTimeout`, within the limit, whatever the work does.
///
/// The work runs in its own task. Past the limit, work that has not begun a write is cancelled (its pool wait or its
/// read stops: nobody waits for it) and answered `onTimeout`; a write that has begun is waited for, so that its
/// transaction ends by its own `COMMIT` or `ROLLBACK` and the answer says which (protocol §8: bounded, and nothing
/// acknowledged is lost). A caller that is cancelled stops waiting at once.
///
/// One deadline per request is enough: work that holds the budget of a deadline already (a store call inside a
/// request, through a store `bounded(by:)` it) runs inline, without a task and a timer of its own (a task per store
/// call is a measurable cost on the hot path). The budget is a value passed down (the request's context, the services
/// and stores bound to it), never a task-local: what decides a write's fate is in the arguments of the calls that
/// lead to it.
public enum Deadline {

    /// `grace`: how long past `limit` the answer waits for work that began a write (default: a fifth of the limit,
    /// at most a second).
    ///
    /// `holding`: the budget of a deadline the caller runs under already; the work then runs inline with it, if that
    /// deadline's work is still running. Work that outlives it (a streamed answer written after its request's handler
    /// returned, which a context or a bound store may still carry the budget into) gets a deadline of its own.
    public static func run<T: Sendable>(
        within limit: Duration, grace: Duration? = nil, timers: TimerWheel,
        onTimeout: @autoclosure @escaping @Sendable () -> any Error = SyncError.unavailable,
        holding held: Budget? = nil,
        _ work: @escaping @Sendable (Budget) async throws -> T
    ) async throws -> T {
        if let held, held.isRunning { return try await work(held) }
        let outcome = Outcome<T>()
        let budget = Budget()
        let running = Mutex<Task<Void, Never>?>(nil)
        let alarm = Alarm(wheel: timers)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                // A caller cancelled before it got here was answered already: its work never starts (else it would run
                // to its end for nobody: a delta's statement, with no deadline's timer left to stop it).
                guard outcome.arm(continuation) else { return }
                let task = Task {
                    let result: Result<T, any Error>
                    do {
                        result = .success(try await work(budget))
                    } catch {
                        result = .failure(error)
                    }
                    budget.close()
                    outcome.finish(result)
                    // The timer goes with the work: left armed, every finished request would hold its closure (and grow
                    // the event loop's timer heap) for the whole limit.
                    alarm.stop()
                }
                running.withLock { $0 = task }
                Self.expire(budget, in: limit, grace: grace ?? min(limit / 5, .seconds(1)), alarm: alarm) {
                    // The caller is told first (a cancelled pool wait must not answer in its place); then the work
                    // stops: a pool wait or a read ends, and a write still in doubt loses its connection, so that it
                    // rolls back unless its COMMIT reached the server already.
                    guard outcome.finish(.failure(onTimeout())) else { return }
                    budget.abandon()
                    task.cancel()
                }
            }
        } onCancel: {
            // Nobody waits for the answer: work that has not begun a write stops; a write that began runs to its end.
            if budget.expire() { running.withLock { $0 }?.cancel() }
            outcome.finish(.failure(CancellationError()))
            alarm.stop()
        }
    }

    /// Calls `timedOut` once `limit` has passed if no write began; else waits for the work, up to `grace` more.
    /// The timers are `alarm`'s: they stop when it does.
    private static func expire(
        _ budget: Budget, in limit: Duration, grace: Duration, alarm: Alarm, _ timedOut: @escaping @Sendable () -> Void
    ) {
        alarm.set(in: limit) {
            if budget.expire() {
                timedOut()
            } else {
                alarm.set(in: grace) { timedOut() }
            }
        }
    }

    /// The timer of one deadline, on the application's `TimerWheel`: cancelled when the work ends, so that nothing of a
    /// finished request waits until the limit.
    package final class Alarm: Sendable {
        private let state = Mutex<(timer: TimerWheel.Handle?, stopped: Bool)>((nil, false))
        private let wheel: TimerWheel

        package init(wheel: TimerWheel) {
            self.wheel = wheel
        }

        /// Runs `action` once `delay` has passed, unless the alarm stops first (at once when it has stopped already).
        package func set(in delay: Duration, _ action: @escaping @Sendable () -> Void) {
            let timer = wheel.schedule(in: delay, action)
            let stopped = state.withLock { state in
                if !state.stopped { state.timer = timer }
                return state.stopped
            }
            if stopped { wheel.cancel(timer) }
        }

        package func stop() {
            let timer = state.withLock { state in
                state.stopped = true
                defer { state.timer = nil }
                return state.timer
            }
            if let timer { wheel.cancel(timer) }
        }
    }

    /// What the work under one deadline has done: whether it began a write, and whether its time is up. Writes ask it
    /// before they begin (`beginWrite`): once a write began, the caller's answer waits for the work (up to a short
    /// grace), and past that the write's `onAbandon` runs (PostgreSQL: the connection is closed, so an uncommitted
    /// transaction rolls back): a write answered 503 cannot land later over a newer one.
    public final class Budget: Sendable {
        private let state = Mutex<(wrote: Bool, expired: Bool, closed: Bool, nextID: Int, onAbandon: [Int: @Sendable () -> Void])>(
            (false, false, false, 0, [:]))

        /// A budget of its own, whose time is never up unless `expire` is called (a deadline's, or a test's).
        package init() {}

        /// Called before a transaction that writes begins: throws 503 `unavailable` when the deadline has passed.
        /// Returns the write's id, for `endWrite`.
        @discardableResult
        package func beginWrite(onAbandon: (@Sendable () -> Void)? = nil) throws -> Int {
            try state.withLock { state in
                guard !state.expired else { throw SyncError.unavailable }
                state.wrote = true
                state.nextID += 1
                if let onAbandon { state.onAbandon[state.nextID] = onAbandon }
                return state.nextID
            }
        }

        /// The write `beginWrite` returned `id` for has ended (committed or rolled back): nothing to abandon any more.
        package func endWrite(_ id: Int) {
            _ = state.withLock { $0.onAbandon.removeValue(forKey: id) }
        }

        /// The caller was answered without the work's result: the writes still running undo themselves.
        package func abandon() {
            for action in state.withLock({ Array($0.onAbandon.values) }) { action() }
        }

        /// True until the work of its deadline has returned.
        package var isRunning: Bool { state.withLock { !$0.closed } }

        /// The work of its deadline has returned: whoever still holds the budget calls under a deadline of its own.
        func close() {
            state.withLock { $0.closed = true }
        }

        /// The time is up: no write begins from now on. True when none began, so the caller may be answered 503:
        /// once one began, the answer must say what it did.
        package func expire() -> Bool {
            state.withLock { state in
                state.expired = true
                return !state.wrote
            }
        }
    }

    /// The first result wins; later ones are dropped.
    private final class Outcome<T: Sendable>: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, early: Result<T, any Error>?, done: Bool)>(
            (nil, nil, false))

        /// False when a result came first: the continuation is resumed with it at once.
        func arm(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
            let early: Result<T, any Error>? = state.withLock { state in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            guard let early else { return true }
            continuation.resume(with: early)
            return false
        }

        /// True when this result is the one the caller gets.
        @discardableResult
        func finish(_ result: Result<T, any Error>) -> Bool {
            let (won, continuation): (Bool, CheckedContinuation<T, any Error>?) = state.withLock { state in
                guard !state.done else { return (false, nil) }
                state.done = true
                guard let continuation = state.continuation else {
                    state.early = result
                    return (true, nil)
                }
                state.continuation = nil
                return (true, continuation)
            }
            continuation?.resume(with: result)
            return won
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
