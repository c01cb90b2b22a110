/// Runs the tests that load the whole machine (a database outage, killing a server under write load) one at a
/// time, so that one's load does not blur the timings another asserts.
public actor HeavyTestGate {
    public static let shared = HeavyTestGate()
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        while busy { await withCheckedContinuation { waiters.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiters.isEmpty { waiters.removeFirst().resume() }
        }
        return try await body()
    }
}
