import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import ServiceLifecycle
import SyncAPI
import Synchronization

/// `GET /changes` (protocol §9): a server-sent event stream that says `change` with the new date of sync as soon as
/// the family's data moves past the client's date, and `: ping` comments in between.
///
/// It follows the SSE conventions so standard EventSource clients resume by themselves: every `change` carries
/// `id: <date>`, `Last-Event-ID` stands for a missing `date`, the stream opens with a `retry:` hint, and proxies are
/// told not to buffer it. Streams wait on the instance's `ChangeHub`, which hears every write of every instance (one
/// `LISTEN` connection on PostgreSQL), so an idle stream costs no database work. It ends when its token stops working
/// (a logout or password change wakes it at once), after `changesMaxDuration`, and at once on graceful shutdown.
struct ChangesRoutes {
    let engine: SyncEngine
    let accounts: AccountService
    let configuration: AppConfiguration
    let streams: LiveStreams
    let hub: ChangeHub?
    /// The timers of the application's time limits.
    let timers: TimerWheel

    /// Whether the stream's token still works and its account still belongs to the stream's space (a removed member's
    /// streams of the space end; a role change keeps them).
    static func stillMember(_ accounts: AccountService, token: String, _ session: Session) async throws -> Bool {
        try await accounts.authenticate(token: token)?.session(in: session.spaceID)?.accountID == session.accountID
    }

    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "changes", headFromGet: false,
            [
                .get: { request, context in
                    guard let token = AuthMiddleware.bearerToken(request) else { throw SyncError.unauthorized }
                    if request.uri.queryParameters["spaces"] != nil {
                        // Only the unprefixed path follows every space (protocol §15).
                        guard context.parameters.get("spaceId") == nil else {
                            throw SyncError.invalidParameter("spaces", "spaces=all is a parameter of /api/v1/changes only.")
                        }
                        return try await allSpaces(request, context, token: token)
                    }
                    return try await oneSpace(request, context, token: token)
                }
            ])
    }

    /// The stream of one space (protocol §9): the home space, or the space of the path.
    func oneSpace(_ request: Request, _ context: AppRequestContext, token: String) async throws -> Response {
        let session = try context.requireSession()
        let query = try SyncQuery(request, allowed: ["date"])
        let date = query.values["date"] ?? request.headers[.lastEventID]
        // The lease and the hub subscription are given back at the end of the body, when the answer is dropped
        // unwritten, or when the body has not started 5 s after the handler answered: a client reset before the head
        // was written can leave the head's write suspended in the HTTP server for good, with the answer and its slot.
        // Nothing a client does keeps them.
        let family = session.spaceID
        let slot = StreamSlot(lease: try streams.open(account: session.accountID), hub: hub, family: family)
        // Subscribed before the token is checked again and the start is read: a write or a revocation from then on
        // always wakes the stream (one in between would wait for the recheck).
        let generation = slot.generation
        let start: (since: Int64?, now: (date: String, version: Int64))
        do {
            // Checked before answering, so that an unreachable database is a 503, not a dead stream; bounded like any
            // request (the stream itself is exempt from the request time limit, its start is not).
            let (engine, accounts) = (engine, accounts)
            start = try await Deadline.run(within: configuration.requestTimeLimit, timers: timers) {
                guard try await Self.stillMember(accounts, token: token, session) else { throw SyncError.unauthorized }
                return try await engine.changesSince(date, session)
            }
        } catch {
            slot.release()
            throw error
        }
        let wakeup = Wakeup(
            hub: hub, family: family, generation: generation, poll: configuration.changesPollInterval,
            recheck: configuration.changesRecheckInterval, timers: timers)
        let (engine, accounts, ping, maxDuration) = (engine, accounts, configuration.changesPingInterval, configuration.changesMaxDuration)
        return eventStream(context, slot: slot) { writer, watch, stop in
            try await Self.stream(
                to: &writer, from: start, wakeup: wakeup, ping: ping, for: maxDuration, watch: watch, stop: stop,
                position: { try await engine.currentPosition(session) },
                date: { version in try await engine.date(atVersion: version, session) },
                stillValid: {
                    guard !slot.isReleased else { return false }
                    return try await Self.stillMember(accounts, token: token, session)
                })
        }
    }

    /// The `200 text/event-stream` answer of a stream whose slot is reserved and whose start is read: `events` writes
    /// after the `retry:` hint, with `watch` around each write and `stop` stopped when the server begins a graceful
    /// shutdown or when its client goes away (its waits on the hub then end at once).
    func eventStream(
        _ context: AppRequestContext, slot: StreamSlot,
        events:
            @escaping @Sendable (
                inout any ResponseBodyWriter, _ watch: @escaping @Sendable () -> @Sendable () -> Void, _ stop: WaitStop
            ) async throws -> Void
    ) -> Response {
        // The body's 5 s to start count from here, once the start is read (counted from before the start's reads, a
        // start slower than that would leave a 200 whose body sends nothing).
        if context.socketEventLoop != nil { slot.armStartLimit(.seconds(5), timers: timers) }
        // A client that goes away gives its slot back at once, and its stream (only its stream: waking the family's
        // would make each of its other streams read its position) wakes to end.
        let stop = WaitStop()
        context.closeFuture?.whenComplete { _ in
            slot.release()
            stop.stop()
        }
        // A write that does not complete within 10 s (a peer that vanished while the connection looks open, so the
        // write waits for room that never comes) gives the slot back and closes the connection.
        // On the application's wheel: cancelling an event-loop timer searches the loop's whole timer heap, and every
        // write of every stream cancels one.
        let closeConnection = context.closeConnection
        let timers = self.timers
        let live = context.socketEventLoop != nil
        let watch: @Sendable () -> @Sendable () -> Void = {
            guard live else { return {} }
            let timer = timers.schedule(in: .seconds(10)) {
                slot.release()
                closeConnection?()
            }
            return { timers.cancel(timer) }
        }
        let body = ResponseBody { writer in
            defer { slot.release() }
            // Too late: the slot was given back already (the stream would be uncounted).
            guard slot.start() else { return }
            let opened = watch()
            try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
            opened()
            // One graceful-shutdown handler for the stream's whole life, not one per wait.
            try await withGracefulShutdownHandler {
                try await events(&writer, watch, stop)
            } onGracefulShutdown: {
                stop.stop()
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache", .xAccelBuffering: "no"],
            body: body)
    }

    /// How a stream learns that its family moved: woken by the instance's `ChangeHub`, or, without one, by polling.
    struct Wakeup: Sendable {
        let hub: ChangeHub?
        let family: String
        /// The family's generation when the stream subscribed to the hub.
        let generation: UInt64
        /// Without a hub: how often to read the counter.
        let poll: Duration
        /// With a hub: how often to re-check the token and counter anyway (expiry; a missed notice).
        let recheck: Duration
        /// The application's clock: the waits between polls.
        let timers: TimerWheel
    }

    /// Writes a `change` whenever the position passes `since`, a ping when idle, until the time is up, the token
    /// stops working, the server shuts down gracefully (SIGTERM), or the task is cancelled. With a hub, an idle
    /// stream reads no change from the database at all; every `recheck` it checks its token (from the session cache).
    static func stream(
        to writer: inout any ResponseBodyWriter, from start: (since: Int64?, now: (date: String, version: Int64)), wakeup: Wakeup,
        ping: Duration, for maxDuration: Duration, watch: @Sendable () -> @Sendable () -> Void = { {} }, stop: WaitStop? = nil,
        position: () async throws -> (date: String, version: Int64, horizon: Int64),
        date: (Int64) async throws -> String, stillValid: () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now + maxDuration
        var pacer = StreamPacer(ping: ping)
        var lastCheck = clock.now
        var since = start.since
        var current = start.now
        var generation = wakeup.generation
        // What the stream has seen: a listener's catch-up wakes the family only once its counter passes it.
        wakeup.hub?.observe(family: wakeup.family, version: current.version)
        while true {
            var events = ""
            if since.map({ current.version > $0 }) ?? true {
                events = "id: \(current.date)\nevent: change\ndata: {\"date\":\"\(current.date)\"}\n\n"
                since = current.version
            }
            try await pacer.send(events, to: &writer, watch: watch)
            let interval = wakeup.hub == nil ? wakeup.poll : wakeup.recheck - (clock.now - lastCheck)
            let timeout = max(.milliseconds(10), min(interval, pacer.untilPing, end - clock.now))
            var notified = true
            if let hub = wakeup.hub {
                let seen = generation
                let family = wakeup.family
                generation = await hub.wait(family: family, seen: seen, timeout: timeout, stop: stop)
                notified = generation != seen
            } else {
                try? await cancelWhenGracefulShutdown { try await wakeup.timers.sleep(for: timeout) }
            }
            guard clock.now < end, !Task.isCancelled, !Task.isShuttingDownGracefully, stop?.isStopped != true else { return }
            // Only a notice, a poll or the recheck reads the database; a ping does not.
            let due = clock.now - lastCheck >= wakeup.recheck
            guard notified || due else { continue }
            // Cached: no database read unless the family's tokens were just revoked (or the cached entry aged out).
            guard try await stillValid() else { return }
            if !notified, let hub = wakeup.hub, hub.sessions.isLive {
                // A recheck with a hub checks the token only: every change of the family reaches the hub (the SQLite
                // write path, or PostgreSQL notices, with every stream woken after the listener reconnects), so
                // reading the counter here would only cost the database one statement per stream per interval.
                // While the listener may be deaf (its heartbeat unheard), the recheck reads the counter.
                lastCheck = clock.now
                continue
            }
            if let version = wakeup.hub?.latestVersion(family: wakeup.family), version > current.version {
                // The notice named the counter value its write committed: no database read.
                current = (try await date(version), version)
                continue
            }
            lastCheck = clock.now
            let read = try await position()
            current = (read.date, read.version)
            wakeup.hub?.observe(family: wakeup.family, version: read.version)
        }
    }
}

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
        _ events: String, to writer: inout any ResponseBodyWriter, watch: () -> @Sendable () -> Void
    ) async throws {
        guard !events.isEmpty || clock.now - lastWrite >= pingDue else { return }
        let written = watch()
        try await writer.write(ByteBuffer(string: events.isEmpty ? ": ping\n\n" : events))
        written()
        if events.isEmpty { pings += 1 }
        lastWrite = clock.now
    }
}

/// One open stream's reservations: its lease of the caps and its subscriptions to the hub (one family, or, for a stream
/// of all the caller's spaces, each space and the account). `release()` gives them back once; so does the slot's end,
/// whatever path dropped it.
final class StreamSlot: Sendable {
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
    func armStartLimit(_ limit: Duration, timers: TimerWheel) {
        _ = timers.schedule(in: limit) { [weak self] in
            if let self, self.state.compareExchange(expected: 0, desired: 2, ordering: .relaxed).exchanged { self.giveBack() }
        }
    }

    /// True once the slot was given back (the stream ended, or its client went away).
    var isReleased: Bool { state.load(ordering: .relaxed) == 2 }

    /// The body starts; false when the slot was given back already.
    func start() -> Bool {
        state.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged
    }

    func release() {
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
final class LiveStreams: Sendable {
    let perAccount: Int
    let perInstance: Int
    private let open = Mutex<(total: Int, byAccount: [String: Int])>((0, [:]))

    init(perAccount: Int, perInstance: Int) {
        self.perAccount = perAccount
        self.perInstance = perInstance
    }

    /// The number of open streams.
    var count: Int { open.withLock { $0.total } }

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

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
