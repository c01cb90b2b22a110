import NIOCore
import NIOPosix
import Synchronization

/// One timer for the time limits of every request: a limit is a slot in a wheel of `resolution`-wide slots, and a
/// single event-loop timer is set for the earliest pending slot (never every slot: an idle server with a limit an hour
/// away is not woken 100 times a second meanwhile).
///
/// Why not an event-loop timer per limit: scheduling one from outside the loop (a request runs on the concurrency pool)
/// wakes the loop's thread, and cancelling it scans the loop's timer heap under its lock; the two are a visible part of
/// a delta request's cost on PostgreSQL. Here arming and cancelling a limit is one
/// dictionary insert or removal under a lock, and the loop is woken only for a limit earlier than every pending one
/// (under load, a new request's limit is later than an older one's: no wake).
/// A limit fires up to one `resolution` late, never early.
///
/// It is also the application's one clock for time limits and durations (`now`): every timer of the server goes
/// through the wheel the application made, so a test replaces time itself with `TimerWheel.manual`, whose time moves
/// only when the test calls `advance(by:)` (and the limits due fire then, in the test's task).
public final class TimerWheel: Sendable {

    /// A pending limit, to cancel it.
    package struct Handle: Sendable {
        fileprivate let slot: Int64
        fileprivate let id: UInt64
    }

    private struct State {
        var slots: [Int64: [UInt64: @Sendable () -> Void]] = [:]
        var pending = 0
        var nextID: UInt64 = 0
        /// Every slot up to this one has fired.
        var done: Int64
        /// The slot the loop's timer is set for (nil: none). While anything is pending it is at or before the earliest
        /// pending slot; a timer set for a slot since cancelled fires for nothing and sets the next.
        var armed: Int64?
    }

    /// What moves time: an event loop's timer over the system's uptime, or a test.
    private enum Ticker: Sendable {
        case loop(any EventLoop)
        case manual(ManualTime)
    }

    /// A test's time, in nanoseconds since the wheel was made.
    private final class ManualTime: Sendable {
        let nanoseconds = Atomic<Int64>(0)
    }

    private let state: Mutex<State>
    private let resolution: Int64
    private let ticker: Ticker
    /// How many times the loop's timer fired (for tests: an idle wheel does not turn).
    let turns = Atomic<Int>(0)

    public init(resolution: Duration, loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()) {
        self.resolution = max(1, resolution.wholeNanoseconds)
        self.ticker = .loop(loop)
        self.state = Mutex(State(done: Int64(NIODeadline.now().uptimeNanoseconds) / self.resolution))
    }

    private init(manualResolution resolution: Duration) {
        self.resolution = max(1, resolution.wholeNanoseconds)
        self.ticker = .manual(ManualTime())
        self.state = Mutex(State(done: 0))
    }

    /// The process's wheel on NIO's shared event loop group: the default of the types a test makes alone. The
    /// application makes its own and hands it to every timer it has.
    public static let shared = TimerWheel(resolution: .milliseconds(10))

    /// A wheel whose time stands still until `advance(by:)` moves it: for tests of what happens after a time, with no
    /// waiting for it.
    public static func manual(resolution: Duration = .milliseconds(1)) -> TimerWheel {
        TimerWheel(manualResolution: resolution)
    }

    /// The wheel's time: the system's uptime, or a manual wheel's time since it was made. Only differences mean
    /// anything.
    public var now: Duration { .nanoseconds(nanoseconds()) }

    /// Moves a manual wheel's time `delay` ahead and fires, in the caller's task, every limit due by then (a wheel on
    /// an event loop ignores it).
    public func advance(by delay: Duration) {
        guard case .manual(let time) = ticker else { return }
        time.nanoseconds.add(max(0, delay.wholeNanoseconds), ordering: .sequentiallyConsistent)
        turn()
    }

    /// Runs `action` on the wheel's event loop once `delay` has passed, unless cancelled first.
    package func schedule(in delay: Duration, _ action: @escaping @Sendable () -> Void) -> Handle {
        let (due, overflow) = nanoseconds().addingReportingOverflow(max(0, delay.wholeNanoseconds))
        let slot = overflow ? .max : due / resolution + (due % resolution == 0 ? 0 : 1)
        let (handle, arm) = state.withLock { state -> (Handle, Int64?) in
            state.nextID &+= 1
            let handle = Handle(slot: max(slot, state.done + 1), id: state.nextID)
            state.slots[handle.slot, default: [:]][handle.id] = action
            state.pending += 1
            guard state.armed.map({ handle.slot < $0 }) ?? true else { return (handle, nil) }
            state.armed = handle.slot
            return (handle, handle.slot)
        }
        if let arm { setTimer(at: arm) }
        return handle
    }

    /// Drops a pending limit (its action and what it holds are released at once); false when it has fired already.
    @discardableResult
    package func cancel(_ handle: Handle) -> Bool {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard let action = state.slots[handle.slot]?.removeValue(forKey: handle.id) else { return nil }
            if state.slots[handle.slot]?.isEmpty == true { state.slots[handle.slot] = nil }
            state.pending -= 1
            return action
        }
        return action != nil
    }

    /// Suspends the calling task for `delay` of the wheel's time; throws `CancellationError` at once when the task is
    /// cancelled (its timer dropped: nothing stays queued for the rest of the delay).
    public func sleep(for delay: Duration) async throws {
        let slept = SleepState()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let handle = schedule(in: delay) { slept.finish(nil) }
                if !slept.start(continuation, handle: handle) { cancel(handle) }
            }
        } onCancel: {
            if let handle = slept.finish(CancellationError()) { cancel(handle) }
        }
    }

    /// Suspends the calling task until the wheel's time is `deadline` (at once when it is past).
    public func sleep(until deadline: Duration) async throws {
        try await sleep(for: deadline - now)
    }

    /// Fires every slot that is due; the loop's timer set for `armed` (nil: a manual wheel's advance) then sets the
    /// next one, for the earliest slot still pending.
    private func turn(armed: Int64? = nil) {
        let now = nanoseconds() / resolution
        let (due, next) = state.withLock { state -> ([@Sendable () -> Void], Int64?) in
            var due: [@Sendable () -> Void] = []
            if now > state.done {
                if now - state.done <= Int64(state.slots.count) {
                    for slot in (state.done + 1)...now { if let fired = state.slots.removeValue(forKey: slot) { due += fired.values } }
                } else {
                    // Long idle: fewer slots pending than slots passed (in order all the same: limits fire in order).
                    for slot in state.slots.keys.filter({ $0 <= now }).sorted() {
                        if let fired = state.slots.removeValue(forKey: slot) { due += fired.values }
                    }
                }
                state.done = now
                state.pending -= due.count
            }
            // Only the timer the state names sets the next: one set for a slot an earlier limit overtook stops here.
            guard let armed, state.armed == armed else { return (due, nil) }
            state.armed = state.pending > 0 ? max(state.slots.keys.min() ?? now + 1, now + 1) : nil
            return (due, state.armed)
        }
        for action in due { action() }
        if let next { setTimer(at: next) }
    }

    /// Sets the loop's timer for the start of `slot`'s end (a limit fires up to a slot late, never early).
    private func setTimer(at slot: Int64) {
        // A manual wheel turns when its test advances it.
        guard case .loop(let loop) = ticker else { return }
        let (deadline, overflow) = slot.multipliedReportingOverflow(by: resolution)
        loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(overflow ? .max : deadline))) {
            self.turns.add(1, ordering: .relaxed)
            self.turn(armed: slot)
        }
    }

    private func nanoseconds() -> Int64 {
        switch ticker {
        case .loop: Int64(NIODeadline.now().uptimeNanoseconds)
        case .manual(let time): time.nanoseconds.load(ordering: .sequentiallyConsistent)
        }
    }
}

/// One `sleep`'s continuation and timer: resumed once, by its timer or by its task's cancellation, whichever is first.
private final class SleepState: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Void, any Error>?, handle: TimerWheel.Handle?, ended: (any Error)??)>(
        (nil, nil, nil))

    /// Records the continuation; false (and resumed) when the sleep ended already (cancelled before it began).
    func start(_ continuation: CheckedContinuation<Void, any Error>, handle: TimerWheel.Handle) -> Bool {
        let ended = state.withLock { state -> (any Error)?? in
            if let ended = state.ended { return ended }
            state.continuation = continuation
            state.handle = handle
            return nil
        }
        guard let ended else { return true }
        if let error = ended { continuation.resume(throwing: error) } else { continuation.resume() }
        return false
    }

    /// Ends the sleep (nil: its time came); answers the timer to cancel, if the sleep was waiting on one.
    @discardableResult
    func finish(_ error: (any Error)?) -> TimerWheel.Handle? {
        let (continuation, handle) = state.withLock { state -> (CheckedContinuation<Void, any Error>?, TimerWheel.Handle?) in
            guard state.ended == nil else { return (nil, nil) }
            state.ended = .some(error)
            defer { (state.continuation, state.handle) = (nil, nil) }
            return (state.continuation, state.handle)
        }
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        return handle
    }
}
