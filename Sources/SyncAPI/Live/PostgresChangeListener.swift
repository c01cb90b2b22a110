import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The one PostgreSQL `LISTEN` connection of an instance: every write `NOTIFY`s its family in its transaction, and
/// this service wakes that family's streams in the `ChangeHub`. After a lost connection it listens again and wakes
/// every stream once, since notices may have been missed meanwhile.
///
/// A connection can also go deaf without failing (the server or a NAT forgot it, a failover moved the address: no
/// reset ever arrives). So the listener sends itself a ping notice every `heartbeat` through the pool and expects to
/// hear it within `deafAfter` (code review D2, security audit M4): when it does not, it treats the connection as
/// lost. Until it hears itself again the session cache is off (every token is looked up) and streams read the
/// counter at their recheck.
public struct PostgresChangeListener: Service {
    /// The channel writes notify on, with `<family id>:<version>` as payload (`t:` and the family id for a token
    /// revocation).
    public static let channel = "syncapi_changes"
    /// The payload prefix of a token revocation.
    public static let revocationPrefix = "t:"
    /// The payload prefix of a listener's own heartbeat: `p:<instance>:<n>`.
    static let pingPrefix = "p:"

    let client: PostgresClient
    let hub: ChangeHub
    let logger: Logger
    let heartbeat: Duration
    /// How long a ping may go unheard before the connection counts as deaf (a loaded machine delays a round trip).
    let deafAfter: Duration
    /// This instance's name in its pings (other instances ignore them).
    let instance = DatabaseIdentity.uuid()

    public init(
        client: PostgresClient, hub: ChangeHub, logger: Logger, heartbeat: Duration = .seconds(2), deafAfter: Duration = .seconds(5)
    ) {
        self.client = client
        self.hub = hub
        self.logger = logger
        self.heartbeat = heartbeat
        self.deafAfter = deafAfter
    }

    /// The listener stopped hearing its own pings.
    struct Deaf: Error {}

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown {
                    try await client.withConnection { conn in
                        do {
                            try await listen(on: conn)
                        } catch let error as Deaf {
                            // Never back to the pool: a deaf connection would answer nothing there either.
                            try? await conn.close()
                            throw error
                        }
                    }
                }
            } catch {
                hub.sessions.setLive(false)
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("change listener lost its connection; listening again", metadata: ["error": "\(String(reflecting: error))"])
                hub.notifyAll()
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            }
        }
    }

    /// Listens on `conn` until it fails or goes deaf.
    func listen(on conn: PostgresConnection) async throws {
        try await conn.listen(on: Self.channel) { notices in
            // Listening now: revocations reach this instance again, and every stream checks once for what may have
            // been missed meanwhile.
            hub.sessions.setLive(true)
            hub.notifyAll()
            let heard = HeardPings()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.beat(heard: heard, on: conn) }
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
    func beat(heard: HeardPings, on conn: PostgresConnection) async throws {
        var n = 0
        while true {
            let payload = "\(Self.pingPrefix)\(instance):\(n)"
            try await client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
            let sent = ContinuousClock.now
            while heard.last < n {
                if ContinuousClock.now >= sent + deafAfter {
                    // Unheard. A connection that still answers a query of its own is slow, not deaf (a loaded
                    // machine): it keeps listening. One that does not is deaf: the cache goes off at once.
                    do {
                        _ = try await Deadline.run(within: deafAfter) { try await conn.query("SELECT 1", logger: logger) }
                    } catch {
                        hub.sessions.setLive(false)
                        throw Deaf()
                    }
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            n += 1
            try await Task.sleep(until: sent + heartbeat)
        }
    }

    /// One notice: a ping of this instance, a revocation, or a write (`<family id>:<version>`).
    func handle(_ payload: String, heard: HeardPings) {
        if payload.hasPrefix(Self.pingPrefix) {
            let parts = payload.dropFirst(Self.pingPrefix.count).split(separator: ":")
            if parts.count == 2, parts[0] == instance, let n = Int(parts[1]) { heard.record(n) }
        } else if payload.hasPrefix(Self.revocationPrefix) {
            hub.revokeTokens(family: String(payload.dropFirst(Self.revocationPrefix.count)))
        } else {
            // `<family id>:<version>`: the counter value the write committed.
            let parts = payload.split(separator: ":", maxSplits: 1)
            hub.notify(family: String(parts[0]), version: parts.count > 1 ? Int64(parts[1]) : nil)
        }
    }
}

/// The highest ping number a listener heard back.
final class HeardPings: Sendable {
    private let heard = Mutex(-1)

    var last: Int { heard.withLock { $0 } }

    func record(_ n: Int) { heard.withLock { $0 = max($0, n) } }
}
