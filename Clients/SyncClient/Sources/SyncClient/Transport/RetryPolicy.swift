/// How the SDK waits before trying again after a network error, a 429 or a 503: exponential backoff with jitter,
/// never sooner than the server's `Retry-After`, a bounded number of attempts per call.
public struct RetryPolicy: Sendable {
    /// Attempts per call, the first included (1: never retry).
    public var attempts: Int
    public var baseDelay: Duration
    public var maximumDelay: Duration
    /// How to wait (injectable: tests pass one that records or skips the waits).
    public var sleep: @Sendable (Duration) async throws -> Void
    /// A number in 0..<1 for the jitter (injectable for deterministic tests).
    public var random: @Sendable () -> Double

    public init(
        attempts: Int = 4, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.attempts = attempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.sleep = sleep
        self.random = random
    }

    /// The wait before attempt `attempt + 1` (0-based): base × 2^attempt capped at the maximum, with "equal jitter"
    /// (half fixed, half random), and at least `retryAfter` seconds when the server said so.
    public func delay(after attempt: Int, retryAfter: Int?) -> Duration {
        let exponential = baseDelay * (1 << min(max(attempt, 0), 16))
        let capped = min(exponential, maximumDelay)
        let jittered = capped * (0.5 + 0.5 * random())
        return max(jittered, .seconds(retryAfter ?? 0))
    }

    /// Runs `body`, retrying the failures `retrying` accepts (by default the transient ones: network, 429, 503) with
    /// backoff. A `Retry-After` longer than `maximumDelay` is not waited for: the error goes to the caller at once.
    func run<T: Sendable>(
        retrying: @Sendable (SyncClientError) -> Bool = { $0.isTransient }, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as SyncClientError where retrying(error) && attempt + 1 < attempts && !Task.isCancelled {
                if let seconds = error.retryAfter, Duration.seconds(seconds) > maximumDelay { throw error }
                try await sleep(delay(after: attempt, retryAfter: error.retryAfter))
                attempt += 1
            }
        }
    }
}
