import Synchronization

/// `GET /ready`'s database check, shared: one ping at a time, its answer reused for `maxAge`, so a flood of `/ready`
/// costs the database at most one query per `maxAge`, whoever sends it.
final class ReadinessProbe: Sendable {
    /// The check: `SyncStore.ping` (throws when the database is away or read-only).
    let check: @Sendable () async throws -> Void
    let maxAge: Duration
    private let state = Mutex<(checked: ContinuousClock.Instant, ready: Bool)?>(nil)
    private let inFlight = Mutex<Task<Bool, Never>?>(nil)

    init(maxAge: Duration = .seconds(1), check: @escaping @Sendable () async throws -> Void) {
        self.check = check
        self.maxAge = maxAge
    }

    /// True when the database answered (writable) within the last `maxAge`.
    func ready() async -> Bool {
        let now = ContinuousClock.now
        if let last = state.withLock({ $0 }), now - last.checked < maxAge { return last.ready }
        let task = inFlight.withLock { task in
            if let task { return task }
            let check = self.check
            let new = Task<Bool, Never> {
                let ready = (try? await check()) != nil
                self.state.withLock { $0 = (ContinuousClock.now, ready) }
                self.inFlight.withLock { $0 = nil }
                return ready
            }
            task = new
            return new
        }
        return await task.value
    }
}
