import ServiceLifecycle
import Synchronization

/// The live change notices of protocol §9 and §15, computed: what a `GET /changes` stream says and when. The route
/// (`Handlers/Routes/ChangesRoutes`) parses the request and writes the events to its socket; this type reserves the
/// stream's slot, checks the caller and reads the start, then waits on the hub (or polls) and says `change` whenever
/// the space's data moves past the client's date, `spaces` whenever the account's memberships change (a stream of all
/// the caller's spaces), and pings in between, until the time is up, the token stops working, the caller leaves the
/// space, or the server shuts down.
public struct ChangeFeed: Sendable {
    /// The durations of a stream.
    public struct Settings: Sendable {
        /// Without a hub: how often to read the counter.
        public var poll: Duration
        /// With a hub: how often to re-check the token and counter anyway (expiry; a missed notice).
        public var recheck: Duration
        /// A ping once quiet this long.
        public var ping: Duration
        /// A stream ends after this long (the client reconnects).
        public var maxDuration: Duration
        /// The bound of a stream's start (its checks and first read): a request's time limit.
        public var startLimit: Duration

        public init(poll: Duration, recheck: Duration, ping: Duration, maxDuration: Duration, startLimit: Duration) {
            (self.poll, self.recheck, self.ping, self.maxDuration, self.startLimit) = (poll, recheck, ping, maxDuration, startLimit)
        }
    }

    let engine: SyncEngine
    let accounts: AccountService
    let streams: LiveStreams
    let hub: ChangeHub?
    let settings: Settings
    let timers: TimerWheel

    public init(engine: SyncEngine, accounts: AccountService, streams: LiveStreams, hub: ChangeHub?, settings: Settings, timers: TimerWheel) {
        (self.engine, self.accounts, self.streams, self.hub, self.settings, self.timers) = (engine, accounts, streams, hub, settings, timers)
    }

    /// An opened stream: its slot reserved and its start read; `run` writes its events.
    public struct Opened: Sendable {
        /// The stream's reservations, given back once (at the end of the body, or before it starts).
        public let slot: StreamSlot
        let events:
            @Sendable (_ write: (String) async throws -> Void, _ watch: @escaping @Sendable () -> @Sendable () -> Void, _ stop: WaitStop)
                async throws -> Void

        /// Writes the stream's events with `write` (each write bounded by `watch`) until it ends; `stop` ends its
        /// waits at once (a graceful shutdown, or its client gone).
        public func run(
            write: (String) async throws -> Void, watch: @escaping @Sendable () -> @Sendable () -> Void, stop: WaitStop
        ) async throws {
            try await events(write, watch, stop)
        }
    }

    /// Whether the stream's token still works and its account still belongs to the stream's space (a removed member's
    /// streams of the space end; a role change keeps them).
    static func stillMember(_ accounts: AccountService, token: String, _ session: Session) async throws -> Bool {
        try await accounts.authenticate(token: token)?.session(in: session.spaceID)?.accountID == session.accountID
    }

    /// The stream of one space (§9) after `date` (nil: from now, a `change` at once).
    public func openSpace(_ session: Session, token: String, date: String?) async throws -> Opened {
        // The lease and the hub subscription are given back at the end of the body, when the answer is dropped
        // unwritten, or when the body has not started 5 s after the handler answered (the route arms that limit).
        let family = session.spaceID
        let slot = StreamSlot(lease: try streams.open(account: session.accountID), hub: hub, family: family)
        // Subscribed before the token is checked again and the start is read: a write or a revocation from then on
        // always wakes the stream (one in between would wait for the recheck).
        let generation = slot.generation
        let start: (since: DatePosition?, now: LivePosition)
        do {
            // Checked before answering, so that an unreachable database is a 503, not a dead stream; bounded like any
            // request (the stream itself is exempt from the request time limit, its start is not).
            let (engine, accounts) = (engine, accounts)
            start = try await Deadline.run(within: settings.startLimit, timers: timers) { budget in
                guard try await Self.stillMember(accounts.bounded(by: budget), token: token, session) else { throw SyncError.unauthorized }
                // The hub's counter, once it follows the space and its listener is live: no read per stream opened.
                let heard = hub.flatMap { hub in hub.sessions.isLive ? hub.latest(family: family) : nil }
                return try await engine.bounded(by: budget).changesSince(date, session, heard: heard)
            }
        } catch {
            slot.release()
            throw error
        }
        let wakeup = Wakeup(hub: hub, family: family, generation: generation, poll: settings.poll, recheck: settings.recheck, timers: timers)
        let (engine, accounts, ping, maxDuration) = (engine, accounts, settings.ping, settings.maxDuration)
        return Opened(slot: slot) { write, watch, stop in
            try await Self.stream(
                write: write, from: start, wakeup: wakeup, ping: ping, for: maxDuration, watch: watch, stop: stop,
                position: { try await engine.currentPosition(session) },
                date: { version, history in try await engine.date(atVersion: version, history: history, session) },
                stillValid: {
                    guard !slot.isReleased else { return false }
                    return try await Self.stillMember(accounts, token: token, session)
                })
        }
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
        write: (String) async throws -> Void, from start: (since: DatePosition?, now: LivePosition), wakeup: Wakeup,
        ping: Duration, for maxDuration: Duration, watch: @Sendable () -> @Sendable () -> Void = { {} }, stop: WaitStop? = nil,
        position: () async throws -> LivePosition,
        date: (Int64, String) async throws -> String, stillValid: () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now + maxDuration
        var pacer = StreamPacer(ping: ping)
        var lastCheck = clock.now
        var since = start.since
        var current = (date: start.now.date, version: start.now.version, history: start.now.history)
        var generation = wakeup.generation
        // What the stream has seen: a listener's catch-up wakes the family only once its counter passes it.
        wakeup.hub?.observe(family: wakeup.family, version: current.version, history: current.history)
        while true {
            var events = ""
            // Past what the client was told, or on another history (a failover: the new line may count below it).
            if since.map({ current.version > $0.version || current.history != $0.history }) ?? true {
                events = "id: \(current.date)\nevent: change\ndata: {\"date\":\"\(current.date)\"}\n\n"
                since = DatePosition(version: current.version, history: current.history)
            }
            try await pacer.send(events, write: write, watch: watch)
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
            if let heard = wakeup.hub?.latest(family: wakeup.family), heard.version > current.version || heard.history != current.history {
                // The notice named the counter value its write committed: no database read.
                current = (try await date(heard.version, heard.history), heard.version, heard.history)
                continue
            }
            lastCheck = clock.now
            let read = try await position()
            current = (read.date, read.version, read.history)
            wakeup.hub?.observe(family: wakeup.family, version: read.version, history: read.history)
        }
    }
}
