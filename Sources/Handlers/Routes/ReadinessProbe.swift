import Synchronization

/// `GET /ready`'s database check, shared: one ping at a time, its answer reused for `maxAge`, so a flood of `/ready`
/// costs the database at most one query per `maxAge`, whoever sends it.
///
/// The first caller to find the answer stale pings, in the caller's own task; callers that come meanwhile wait for its
/// answer. A ping cut short by its caller's cancellation answers its waiters but is not kept as the instance's state.
final class ReadinessProbe: Sendable {
    /// The check: `SyncStore.ping` (throws when the database is away or read-only).
    let check: @Sendable () async throws -> Void
    let maxAge: Duration
    /// The monotonic clock the answer's age is read on (a test moves it instead of waiting).
    let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex<State>(State())

    private struct State {
        var last: (checked: ContinuousClock.Instant, ready: Bool)?
        var pinging = false
        var waiting: [CheckedContinuation<Bool, Never>] = []
    }

    init(
        maxAge: Duration = .seconds(1), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        check: @escaping @Sendable () async throws -> Void
    ) {
        self.check = check
        self.maxAge = maxAge
        self.now = now
    }

    /// True when the database answered (writable) within the last `maxAge`.
    func ready() async -> Bool {
        enum Turn {
            case answered(Bool)
            case ping
            case wait
        }
        let now = now()
        let turn = state.withLock { state -> Turn in
            if let last = state.last, now - last.checked < maxAge { return .answered(last.ready) }
            if state.pinging { return .wait }
            state.pinging = true
            return .ping
        }
        switch turn {
        case .answered(let ready):
            return ready
        case .wait:
            return await withCheckedContinuation { continuation in
                let last = state.withLock { state -> Bool? in
                    guard state.pinging else { return state.last?.ready ?? false }
                    state.waiting.append(continuation)
                    return nil
                }
                if let last { continuation.resume(returning: last) }
            }
        case .ping:
            let ready = (try? await check()) != nil
            let cancelled = Task.isCancelled
            let waiting = state.withLock { state in
                if !cancelled { state.last = (self.now(), ready) }
                state.pinging = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in waiting { waiter.resume(returning: ready) }
            return ready
        }
    }
}
