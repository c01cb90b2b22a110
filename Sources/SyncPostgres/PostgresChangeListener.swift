import Logging
import PostgresNIO
import ServiceLifecycle
import SyncAPI
import Synchronization

/// The one PostgreSQL `LISTEN` connection of an instance: every write `NOTIFY`s its family in its transaction, and
/// this service wakes that family's streams in the `ChangeHub`. After a lost connection it listens again and wakes
/// the families whose counter moved meanwhile (one statement for all of them: `catchUp`).
///
/// A connection can also go deaf without failing (the server or a NAT forgot it, a failover moved the address: no
/// reset ever arrives). So the listener sends itself a ping notice every `heartbeat` through the pool and expects to
/// hear it within `deafAfter`: when it does not, it treats the connection as lost. Until it hears itself again the
/// session cache is off (every token is looked up), and the counters of the followed families are read every
/// heartbeat to wake those that moved.
public struct PostgresChangeListener: Service {
    /// The channel writes notify on, with `<family id>:<version>` as payload (`t:` and the family id for a token
    /// revocation).
    public static let channel = "syncapi_changes"
    /// The payload prefix of a token revocation.
    public static let revocationPrefix = "t:"
    /// The payload prefix of a listener's own heartbeat: `p:<instance>:<n>`.
    static let pingPrefix = "p:"

    let client: PostgresClient
    /// Where pings are sent: the statements' pool, so that a listener on another database than the writes' (a wrong
    /// `--listen-database`) never hears them and counts as deaf.
    let pings: PostgresClient
    /// With a `--listen-database` of its own: the database id the writes' database holds, which the listening
    /// database must hold too; a listener on another database hears no write and no revocation, so the instance
    /// stops with an error rather than serve stale streams and 60 s revocations.
    let expectedDatabaseID: (@Sendable () async throws -> String)?
    let hub: ChangeHub
    let logger: Logger
    let heartbeat: Duration
    /// How long a ping may go unheard before the connection counts as deaf (a loaded machine delays a round trip).
    let deafAfter: Duration
    /// How long a ping may go unheard before the cache stops trusting the listener, deaf or not yet known.
    let suspectAfter: Duration
    /// The timers of its time limits.
    let timers: TimerWheel
    /// This instance's name in its pings (other instances ignore them).
    let instance = DatabaseIdentity.uuid()

    public init(
        client: PostgresClient, pings: PostgresClient? = nil, expectedDatabaseID: (@Sendable () async throws -> String)? = nil,
        hub: ChangeHub, logger: Logger, timers: TimerWheel, heartbeat: Duration = .seconds(2), deafAfter: Duration = .seconds(5),
        suspectAfter: Duration = .seconds(1)
    ) {
        self.client = client
        self.pings = pings ?? client
        self.expectedDatabaseID = expectedDatabaseID
        self.hub = hub
        self.logger = logger
        self.timers = timers
        self.heartbeat = heartbeat
        self.deafAfter = deafAfter
        self.suspectAfter = min(suspectAfter, deafAfter)
    }

    /// The listener stopped hearing its own pings.
    struct Deaf: Error {}

    /// The listening database is not the writes' database.
    struct WrongDatabase: Error, CustomStringConvertible {
        let description =
            "--listen-database names another database than --database (their syncapi_meta database ids differ): it would hear no write and no revocation"
    }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown {
                    try await client.withConnection { conn in
                        try await checkDatabase(on: conn)
                        do {
                            try await listen(on: conn)
                        } catch let error as Deaf {
                            // Never back to the pool: a deaf connection would answer nothing there either.
                            try? await conn.close()
                            throw error
                        }
                    }
                }
            } catch let error as WrongDatabase {
                hub.setLive(false)
                logger.critical("the change listener listens on another database", metadata: ["error": "\(error)"])
                throw error
            } catch {
                hub.setLive(false)
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("change listener lost its connection; listening again", metadata: ["error": "\(String(reflecting: error))"])
                // The families that moved meanwhile wake (when the database answers; else at the next listen).
                await catchUp(wakeUnread: true)
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            }
        }
    }

    /// Throws `WrongDatabase` when `conn` is not on the writes' database (a database id that differs, or none where
    /// the writes' database has one). Throws something else, retried, while the writes' database has no id yet.
    func checkDatabase(on conn: PostgresConnection) async throws {
        guard let expectedDatabaseID else { return }
        let expected = try await expectedDatabaseID()
        var found: String?
        do {
            for try await value in try await conn.statement("SELECT value FROM syncapi_meta WHERE key = 'database_id'", logger: logger)
                .decode(String.self)
            {
                found = value
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42P01" {
            found = nil  // no syncapi_meta table: not a SyncAPI database
        }
        guard found == expected else { throw WrongDatabase() }
    }

    /// Listens on `conn` until it fails or goes deaf.
    func listen(on conn: PostgresConnection) async throws {
        try await conn.listen(on: Self.channel) { notices in
            // Listening now: revocations reach this instance again (the session cache starts empty), and the families
            // whose counter moved while no one listened wake, with one read for all of them: a stream of another
            // family reads nothing.
            hub.setLive(true)
            await catchUp(wakeUnread: true)
            let heard = HeardPings()
            let suspicion = Suspicion()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.beat(heard: heard, suspicion: suspicion, on: conn) }
                group.addTask { try await self.catchUpWhileSuspected(suspicion) }
                group.addTask {
                    for try await notice in notices { self.handle(notice.payload, heard: heard) }
                    throw Deaf()
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
    }

    /// Pings through the pool every `heartbeat`; throws `Deaf` when a ping is not heard within `deafAfter` and the
    /// listening connection does not answer a query of its own within `deafAfter` either.
    ///
    /// A ping unheard for `suspectAfter` already turns the session cache off (every token is checked in the database)
    /// until a ping is heard again, so that a frozen listener does not keep a logout elsewhere from taking effect here
    /// for the whole 10 s or so that telling deaf from slow takes. Meanwhile `catchUpWhileSuspected` reads the counters
    /// of the followed families every heartbeat, one statement for all, and wakes only those that moved: a write made
    /// while the listener is frozen reaches this instance's streams within seconds, and a ping late because the
    /// database is busy costs it one statement per heartbeat, not one per stream.
    func beat(heard: HeardPings, suspicion: Suspicion, on conn: PostgresConnection) async throws {
        var liveness = ListenerLiveness(heartbeat: heartbeat, suspectAfter: suspectAfter, deafAfter: deafAfter)
        var n = 0
        while true {
            let payload = "\(Self.pingPrefix)\(instance):\(n)"
            // Bounded like the check below: a statement written to a pooled connection the server has just closed is
            // never answered (PostgresNIO drops it), and an unbounded ping would stop the listener, and the
            // application's shutdown, for good. Past the limit the listener fails and is replaced.
            try await Deadline.run(within: deafAfter, timers: timers) { [pings, logger] _ in
                try await pings.statement("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
            }
            var action = liveness.sent(n, at: timers.now)
            pinging: while true {
                switch action {
                case .wait(let until), .suspect(let until):
                    if case .suspect = action {
                        hub.setLive(false)
                        suspicion.set(true)
                    }
                    let isHeard = try await heard.wait(for: n, until: until, timers: timers)
                    action = isHeard ? liveness.heard(heard.last) : liveness.timeout(at: timers.now)
                case .checkConnection:
                    // Unheard. A connection that still answers a query of its own is slow, not deaf (a loaded
                    // machine): it keeps listening. One that does not is deaf: the cache goes off at once.
                    let answered: Bool
                    do {
                        _ = try await Deadline.run(within: deafAfter, timers: timers) { _ in try await conn.statement("SELECT 1", logger: logger) }
                        answered = true
                    } catch {
                        answered = false
                    }
                    action = liveness.connection(answered: answered)
                case .deaf:
                    hub.setLive(false)
                    throw Deaf()
                case .nextPing(let at, let clearSuspicion):
                    if clearSuspicion {
                        suspicion.set(false)
                        hub.setLive(true)
                    }
                    n += 1
                    try await timers.sleep(until: at)
                    break pinging
                }
            }
        }
    }

    /// While `suspicion` holds: a catch-up at once, then one every heartbeat.
    func catchUpWhileSuspected(_ suspicion: Suspicion) async throws {
        while true {
            try await suspicion.waitUntilSuspected()
            await catchUp(wakeUnread: false)
            try await timers.sleep(for: heartbeat)
        }
    }

    /// Reads the counters of the families streams follow, in one statement through the statements' pool, and wakes
    /// those that moved past what their streams have seen (`ChangeHub.catchUp`). A failed read (the database away)
    /// wakes nothing: the next catch-up, or the listener's replacement, reads again.
    func catchUp(wakeUnread: Bool) async {
        let keys = hub.followedKeys
        guard !keys.isEmpty else { return }
        do {
            let (counters, histories) = try await Deadline.run(within: deafAfter, timers: timers) { [pings, logger] _ in
                try await pings.statement("SELECT id, version, history FROM families WHERE id = ANY(\(keys))", logger: logger) { rows in
                    var counters: [String: Int64] = [:]
                    var histories: [String: String] = [:]
                    for try await (id, version, history) in rows.decode((String, Int64, String).self) {
                        counters[id] = version
                        if !history.isEmpty { histories[id] = history }
                    }
                    return (counters, histories)
                }
            }
            let woken = hub.catchUp(counters, histories: histories, wakeUnread: wakeUnread)
            if woken > 0 { logger.debug("change listener caught up", metadata: ["woken": "\(woken)", "followed": "\(keys.count)"]) }
        } catch {
            logger.debug("change listener could not catch up", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// One notice: a ping of this instance, a revocation, or a write (`<family id>:<version>[:<history>]`).
    func handle(_ payload: String, heard: HeardPings) {
        if payload.hasPrefix(Self.pingPrefix) {
            let parts = payload.dropFirst(Self.pingPrefix.count).split(separator: ":")
            if parts.count == 2, parts[0] == instance, let n = Int(parts[1]) { heard.record(n) }
        } else if payload.hasPrefix(Self.revocationPrefix) {
            hub.revokeTokens(family: String(payload.dropFirst(Self.revocationPrefix.count)))
        } else {
            // `<family id>:<version>[:<history>]`: the counter value the write committed, and the history it is on
            // when not the first (`SpaceLineage`).
            let parts = payload.split(separator: ":", maxSplits: 2)
            hub.notify(
                family: String(parts[0]), version: parts.count > 1 ? Int64(parts[1]) : nil, history: parts.count > 2 ? String(parts[2]) : "")
        }
    }
}

/// Whether the listener's last ping is unheard past `suspectAfter`, and a way to wait until it is.
final class Suspicion: Sendable {
    private let state = Mutex<(suspected: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func set(_ suspected: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.suspected = suspected
            guard suspected else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once suspected (at once if it is); throws when the task is cancelled.
    func waitUntilSuspected() async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.suspected || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
        try Task.checkCancellation()
    }
}

/// The highest ping number a listener heard back, and a way to wait for one.
final class HeardPings: Sendable {
    private struct State {
        var last = -1
        /// The one waiter (the listener's beat): the ping it waits for, its continuation, its timer.
        var waiter: (id: Int, n: Int, continuation: CheckedContinuation<Bool, Never>)?
        var timer: (wheel: TimerWheel, handle: TimerWheel.Handle)?
        var nextID = 0
    }

    private let state = Mutex(State())

    var last: Int { state.withLock { $0.last } }

    func record(_ n: Int) {
        let (waiter, timer) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, (wheel: TimerWheel, handle: TimerWheel.Handle)?) in
            state.last = max(state.last, n)
            guard let waiter = state.waiter, state.last >= waiter.n else { return (nil, nil) }
            defer { (state.waiter, state.timer) = (nil, nil) }
            return (waiter.continuation, state.timer)
        }
        waiter?.resume(returning: true)
        if let timer { timer.wheel.cancel(timer.handle) }
    }

    /// Whether ping `n` is heard before `deadline` of `timers`' time (false past it, or when the task is cancelled:
    /// then it throws).
    func wait(for n: Int, until deadline: Duration, timers: TimerWheel) async throws -> Bool {
        let heard = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let id = state.withLock { state -> Int? in
                    if state.last >= n || Task.isCancelled { return nil }
                    state.nextID += 1
                    state.waiter = (state.nextID, n, continuation)
                    return state.nextID
                }
                guard let id else { return continuation.resume(returning: last >= n) }
                let timer = timers.schedule(in: deadline - timers.now) { self.end(id) }
                // Kept to be dropped when the ping comes first; dropped now when it came already.
                let stale = state.withLock { state -> Bool in
                    guard state.waiter?.id == id else { return true }
                    state.timer = (timers, timer)
                    return false
                }
                if stale { timers.cancel(timer) }
            }
        } onCancel: {
            end(nil)
        }
        try Task.checkCancellation()
        return heard
    }

    /// Ends the wait `id` (nil: whichever) unheard.
    private func end(_ id: Int?) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter, id == nil || waiter.id == id else { return nil }
            defer { (state.waiter, state.timer) = (nil, nil) }
            return waiter.continuation
        }
        waiter?.resume(returning: false)
    }
}
