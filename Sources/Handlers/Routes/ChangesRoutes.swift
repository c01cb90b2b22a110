import HTTPTypes
import Hummingbird
import NIOCore
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

    func add(to group: RouterGroup<AppRequestContext>) {
        let poll = configuration.changesPollInterval
        let ping = configuration.changesPingInterval
        let maxDuration = configuration.changesMaxDuration
        let recheck = configuration.changesRecheckInterval
        group.resource(
            "changes", headFromGet: false,
            [
                .get: { request, context in
                    let session = try context.requireSession()
                    guard let token = AuthMiddleware.bearerToken(request) else { throw SyncError.unauthorized }
                    let query = try SyncQuery(request, allowed: ["date"])
                    let date = query.values["date"] ?? request.headers[.lastEventID]
                    let lease = try streams.open(account: session.accountID)
                    // Subscribed before the token is checked again and the start is read: a write or a revocation
                    // from then on always wakes the stream (one in between would wait for the recheck).
                    let family = session.familyID
                    let generation = hub?.subscribe(family: family) ?? 0
                    let start: (since: Int64?, now: (date: String, version: Int64))
                    do {
                        guard try await accounts.authenticate(token: token) == session else { throw SyncError.unauthorized }
                        // Checked before answering, so that an unreachable database is a 503, not a dead stream.
                        start = try await engine.changesSince(date, session)
                    } catch {
                        hub?.unsubscribe(family: family)
                        lease.close()
                        throw error
                    }
                    let body = ResponseBody { writer in
                        defer {
                            hub?.unsubscribe(family: family)
                            lease.close()
                        }
                        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                        let wakeup = Wakeup(hub: hub, family: family, generation: generation, poll: poll, recheck: recheck)
                        try await Self.stream(
                            to: &writer, from: start, wakeup: wakeup, ping: ping, for: maxDuration,
                            position: { try await engine.currentPosition(session) },
                            date: { version in try await engine.date(atVersion: version, session) },
                            stillValid: { try await accounts.authenticate(token: token) == session })
                        try await writer.finish(nil)
                    }
                    return Response(
                        status: .ok,
                        headers: [.contentType: "text/event-stream", .cacheControl: "no-cache", .xAccelBuffering: "no"],
                        body: body)
                }
            ])
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
    }

    /// Writes a `change` whenever the position passes `since`, a ping when idle, until the time is up, the token
    /// stops working, the server shuts down gracefully (SIGTERM), or the task is cancelled. With a hub, an idle
    /// stream reads no change from the database at all; every `recheck` it checks its token (from the session cache).
    static func stream(
        to writer: inout any ResponseBodyWriter, from start: (since: Int64?, now: (date: String, version: Int64)), wakeup: Wakeup,
        ping: Duration, for maxDuration: Duration, position: () async throws -> (date: String, version: Int64, horizon: Int64),
        date: (Int64) async throws -> String, stillValid: () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now + maxDuration
        var lastWrite = clock.now
        var lastCheck = clock.now
        var since = start.since
        var current = start.now
        var generation = wakeup.generation
        while true {
            if since.map({ current.version > $0 }) ?? true {
                try await writer.write(ByteBuffer(string: "id: \(current.date)\nevent: change\ndata: {\"date\":\"\(current.date)\"}\n\n"))
                since = current.version
                lastWrite = clock.now
            } else if clock.now - lastWrite >= ping {
                try await writer.write(ByteBuffer(string: ": ping\n\n"))
                lastWrite = clock.now
            }
            let interval = wakeup.hub == nil ? wakeup.poll : wakeup.recheck - (clock.now - lastCheck)
            let timeout = max(.milliseconds(10), min(interval, ping - (clock.now - lastWrite), end - clock.now))
            var notified = true
            if let hub = wakeup.hub {
                let seen = generation
                let family = wakeup.family
                generation = await cancelWhenGracefulShutdown { await hub.wait(family: family, seen: seen, timeout: timeout) }
                notified = generation != seen
            } else {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: timeout) }
            }
            guard clock.now < end, !Task.isCancelled, !Task.isShuttingDownGracefully else { return }
            // Only a notice, a poll or the recheck reads the database; a ping does not.
            let due = clock.now - lastCheck >= wakeup.recheck
            guard notified || due else { continue }
            // Cached: no database read unless the family's tokens were just revoked (or the cached entry aged out).
            guard try await stillValid() else { return }
            if !notified, wakeup.hub != nil {
                // A recheck with a hub checks the token only: every change of the family reaches the hub (the SQLite
                // write path, or PostgreSQL notices, with every stream woken after the listener reconnects), so
                // reading the counter here would only cost the database one statement per stream per interval.
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
        }
    }
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
    }
}

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
