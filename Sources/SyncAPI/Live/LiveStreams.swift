import Synchronization

/// The writes of a change stream: its events, or a `: ping` once it has been quiet for the ping interval. The first
/// pings come sooner: 1 s in, then 2, 4, 8 and 16 s apart. A client that reset its connection as the stream opened is
/// not always seen by the read side, and a write may still be taken (buffered) after the reset; a later one fails, and
/// the stream, its lease and its subscription end within seconds, not a ping interval.
struct StreamPacer {
    let ping: Duration
    private let clock = ContinuousClock()
    private var lastWrite: ContinuousClock.Instant
    private var pings = 0

    init(ping: Duration) {
        self.ping = ping
        lastWrite = clock.now
    }

    private var pingDue: Duration { min(ping, .seconds(1 << min(pings, 4))) }

    /// How long until the next ping is due.
    var untilPing: Duration { pingDue - (clock.now - lastWrite) }

    /// Writes `events`, or a ping when there are none and one is due; `watch` bounds the write (see `eventStream`).
    mutating func send(
        _ events: String, write: (String) async throws -> Void, watch: () -> @Sendable () -> Void
    ) async throws {
        guard !events.isEmpty || clock.now - lastWrite >= pingDue else { return }
        let written = watch()
        try await write(events.isEmpty ? ": ping\n\n" : events)
        written()
        if events.isEmpty { pings += 1 }
        lastWrite = clock.now
    }
}

/// One open stream's reservations: its lease of the caps and its subscriptions to the hub (one family, or, for a stream
/// of all the caller's spaces, each space and the account). `release()` gives them back once; so does the slot's end,
/// whatever path dropped it.
public final class StreamSlot: Sendable {
    let lease: LiveStreams.Lease
    let hub: ChangeHub?
    /// The first family followed (a one-space stream's only one).
    let family: String
    /// The family's generation when the slot subscribed.
    let generation: UInt64
    /// 0: reserved, 1: the body started, 2: released.
    private let state = Atomic<Int>(0)
    /// Every key followed now; nil once given back (nothing is subscribed after that).
    private let followed: Mutex<Set<String>?>

    init(lease: LiveStreams.Lease, hub: ChangeHub?, family: String) {
        self.lease = lease
        self.hub = hub
        self.family = family
        generation = hub?.subscribe(family: family) ?? 0
        followed = Mutex([family])
    }

    /// Follows exactly `keys` from now on (subscribing the new ones, giving back the others) and returns each key's
    /// generation; nil once the slot was given back.
    func follow(_ keys: Set<String>) -> [String: UInt64]? {
        followed.withLock { followed -> [String: UInt64]? in
            guard let current = followed else { return nil }
            guard let hub else {
                followed = keys
                return Dictionary(uniqueKeysWithValues: keys.map { ($0, 0) })
            }
            for key in current.subtracting(keys) { hub.unsubscribe(family: key) }
            var generations: [String: UInt64] = [:]
            for key in keys {
                generations[key] = current.contains(key) ? hub.generation(family: key) : hub.subscribe(family: key)
            }
            followed = keys
            return generations
        }
    }

    /// Gives the slot back if the answer's body has not started `limit` from now (over a socket: a client reset as the
    /// head is written can leave the head's write suspended until the idle timeout).
    public func armStartLimit(_ limit: Duration, timers: TimerWheel) {
        _ = timers.schedule(in: limit) { [weak self] in
            if let self, self.state.compareExchange(expected: 0, desired: 2, ordering: .relaxed).exchanged { self.giveBack() }
        }
    }

    /// True once the slot was given back (the stream ended, or its client went away).
    public var isReleased: Bool { state.load(ordering: .relaxed) == 2 }

    /// The body starts; false when the slot was given back already.
    public func start() -> Bool {
        state.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged
    }

    public func release() {
        guard state.exchange(2, ordering: .relaxed) != 2 else { return }
        giveBack()
    }

    private func giveBack() {
        let keys = followed.withLock { followed -> Set<String> in
            defer { followed = nil }
            return followed ?? []
        }
        for key in keys { hub?.unsubscribe(family: key) }
        lease.close()
    }

    deinit { release() }
}

/// Counts open change streams, per account and for the instance, and refuses one past either cap (429), so that
/// open connections cannot exhaust the server (protocol §8).
public final class LiveStreams: Sendable {
    let perAccount: Int
    let perInstance: Int
    private let open = Mutex<(total: Int, byAccount: [String: Int])>((0, [:]))

    public init(perAccount: Int, perInstance: Int) {
        self.perAccount = perAccount
        self.perInstance = perInstance
    }

    /// The number of open streams.
    public var count: Int { open.withLock { $0.total } }

    /// Reserves a stream for `account`; throws 429 `too_many_requests` past a cap.
    func open(account: String) throws -> Lease {
        try open.withLock { state in
            guard state.total < perInstance else {
                throw SyncError.tooManyRequests(retryAfter: 30, detail: "This server holds as many live streams as it can.")
            }
            guard state.byAccount[account, default: 0] < perAccount else {
                throw SyncError.tooManyRequests(retryAfter: 30, detail: "This account has \(perAccount) live streams open already.")
            }
            state.total += 1
            state.byAccount[account, default: 0] += 1
        }
        return Lease(streams: self, account: account)
    }

    fileprivate func close(account: String) {
        open.withLock { state in
            state.total -= 1
            let left = state.byAccount[account, default: 1] - 1
            state.byAccount[account] = left > 0 ? left : nil
        }
    }

    /// One reserved stream; `close()` gives it back (once).
    final class Lease: Sendable {
        let streams: LiveStreams
        let account: String
        private let closed = Atomic<Bool>(false)

        init(streams: LiveStreams, account: String) {
            self.streams = streams
            self.account = account
        }

        func close() {
            guard !closed.exchange(true, ordering: .relaxed) else { return }
            streams.close(account: account)
        }

        deinit { close() }
    }
}
