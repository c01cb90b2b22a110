import Synchronization

/// Admits work that a client can start without a token (signup, login, password checks) per client address, in memory,
/// before it touches the database or the password hasher (protocol §8): a token bucket per address key
/// (`ClientAddress.key`: IPv6 by /64), `burst` deep, refilled at `perMinute`. Past it, 429 `too_many_requests` with the
/// seconds until the next token.
///
/// Per instance: behind a load balancer of N instances a client gets at most N times the rate, which still bounds
/// what it costs each instance. The database throttle of protocol §1 (failures per pair, address and username)
/// counts across instances behind it.
public final class AdmissionLimiter: Sendable {
    /// One kind of work's rate.
    public struct Rate: Sendable, Equatable {
        public var burst: Int
        public var perMinute: Int

        public init(burst: Int, perMinute: Int) {
            self.burst = burst
            self.perMinute = perMinute
        }
    }

    private struct Bucket {
        var tokens: Double
        var updatedMs: Int64
    }

    let rate: Rate
    let capacity: Int
    private let now: @Sendable () -> Int64
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(rate: Rate, capacity: Int = 100_000, now: @escaping @Sendable () -> Int64 = WallClock.nowMs) {
        self.rate = rate
        self.capacity = capacity
        self.now = now
    }

    /// Takes one token for `address`; throws 429 when its bucket is empty.
    public func admit(_ address: String) throws {
        let key = ClientAddress.key(address)
        let nowMs = now()
        let perMs = Double(max(1, rate.perMinute)) / 60_000
        let wait: Int? = buckets.withLock { buckets in
            if buckets.count >= capacity, buckets[key] == nil {
                // Full: drop the buckets that refilled (they hold no state a fresh one would not).
                buckets = buckets.filter { Double(nowMs - $0.value.updatedMs) * perMs + $0.value.tokens < Double(rate.burst) }
                if buckets.count >= capacity { buckets.removeAll() }
            }
            var bucket = buckets[key] ?? Bucket(tokens: Double(rate.burst), updatedMs: nowMs)
            bucket.tokens = min(Double(rate.burst), bucket.tokens + Double(max(0, nowMs - bucket.updatedMs)) * perMs)
            bucket.updatedMs = nowMs
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return Int(((1 - bucket.tokens) / perMs / 1000).rounded(.up)) }
            bucket.tokens -= 1
            return nil
        }
        if let wait {
            throw SyncError.tooManyRequests(retryAfter: max(1, wait), detail: "Too many requests from this address; retry later.")
        }
    }
}
