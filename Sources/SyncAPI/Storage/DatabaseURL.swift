import Foundation

/// Where the data lives, from `--database` / `SYNCAPI_DATABASE`: `sqlite:PATH` or `postgres://user:pass@host:port/db`.
public enum DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(host: String, port: Int, username: String, password: String?, database: String, requireTLS: Bool)

    /// Parses a database URL; the error message is one line a person can act on.
    public init(parsing text: String) throws(DatabaseURLError) {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw DatabaseURLError("sqlite URL needs a file path, e.g. sqlite:data/syncapi.sqlite") }
            self = .sqlite(path: path)
            return
        }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"), let url = URLComponents(string: text),
            let host = url.host, !host.isEmpty
        else {
            // Not echoed: the text may hold a password.
            throw DatabaseURLError("unsupported database URL: use sqlite:PATH or postgres://USER@HOST:PORT/DATABASE")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !database.isEmpty else { throw DatabaseURLError("postgres URL needs a database name after the host: …/DATABASE") }
        guard let user = url.user, !user.isEmpty else { throw DatabaseURLError("postgres URL needs a user name: postgres://USER@…") }
        // Without `sslmode`, TLS is required for any host but this machine: a password and every family's data never
        // cross a network in clear unless the URL says `sslmode=disable`.
        let loopback = ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) || host.hasPrefix("127.")
        let sslmode = url.queryItems?.first { $0.name == "sslmode" }?.value ?? (loopback ? "disable" : "require")
        guard ["disable", "require"].contains(sslmode) else {
            throw DatabaseURLError("sslmode must be disable or require, not \(sslmode)")
        }
        self = .postgres(
            host: host, port: url.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: url.password.map { $0.removingPercentEncoding ?? $0 }, database: database, requireTLS: sslmode == "require")
    }

    /// The same URL with `password` (from a password file).
    public func withPassword(_ password: String) -> DatabaseURL {
        guard case .postgres(let host, let port, let user, _, let db, let tls) = self else { return self }
        return .postgres(host: host, port: port, username: user, password: password, database: db, requireTLS: tls)
    }

    /// The URL without its password, for logs.
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let host, let port, let user, _, let db, _): return "postgres://\(user)@\(host):\(port)/\(db)"
        }
    }
}

/// A database URL that cannot be used, with a message for the operator.
public struct DatabaseURLError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The PostgreSQL pools of one instance, as `serve` opens them; tests get the same by default (issue 53).
///
/// Every pool opens connections on demand and closes one idle for `idleTimeout`: PostgresNIO 1.33.2's pool traps
/// (`precondition(minimumConcurrentConnections <= stats.active)`) when a lease finds fewer live connections than a
/// minimum above zero, which is what a database outage leaves, so no pool here has a minimum (docs/decisions.md,
/// "Pools without a minimum").
public struct PoolSize: Sendable {
    public var connections: Int
    /// Connections of a second pool for snapshot answers only (`PostgresStore.snapshotClient`); nil: none, they
    /// share the first.
    public var snapshotConnections: Int?
    public init(connections: Int = PoolSize.defaultConnections, snapshotConnections: Int? = 8) {
        self.connections = connections
        self.snapshotConnections = snapshotConnections
    }

    /// How long a connection stays open unused: PostgresNIO's default, a minute. Each time a connection goes back to
    /// the pool the pool arms a timer of this length, whose cancelled sleep the Swift runtime keeps until its deadline
    /// (`keepAliveFrequency`), so what an instance holds levels off after a minute of load at about 0.7 KB per
    /// request answered in it (docs/scaling.md). 5 s (the keep-alive's, tried first) was followed by two clean-clone
    /// test runs that hung in PostgreSQL tests, their process idle for half an hour; the cause was not found, and a
    /// minute is what the test pools ran with through every earlier green run.
    public static let idleTimeout: Duration = .seconds(60)

    /// How long a session of the statements' pool may stay inside a transaction while PostgreSQL waits for the
    /// instance's next statement before PostgreSQL ends it (`idle_in_transaction_session_timeout`). A write's
    /// transaction runs its statements one after the other and never waits for a client, and the instance closes the
    /// connection of a write it abandons at its time limit. A session waiting past this is one whose instance stopped
    /// (frozen, paused, cut off) or whose close never reached the database: its transaction would hold its space's
    /// lock, and every write of that space on every instance would wait, for as long as the connection lives.
    public static let idleInTransactionTimeout: Duration = .seconds(30)

    /// The default size of the statements' pool: twice the cores plus two (as many statements running at once as the
    /// database can run well, the rest waiting their turn in the pool rather than in the database's scheduler),
    /// counting this host's cores for the database's. More connections only lengthen the tail of page syncs at the same
    /// throughput (docs/performance.md).
    public static var defaultConnections: Int { max(4, 2 * ProcessInfo.processInfo.activeProcessorCount + 2) }

    /// How long a pooled connection stays idle before it is pinged (PostgresNIO's default is 30 s). The pool arms a
    /// keep-alive timer each time a connection goes back to it; leased again, the timer is cancelled but its sleep
    /// stays queued in the Swift runtime until its own deadline, with its memory, so what an instance holds grows
    /// with this interval (`PoolTimerTests`, docs/scaling.md). 5 s holds a sixth of what 30 s does, and a connection a
    /// middlebox dropped while idle is found before a request needs it.
    public static let keepAliveFrequency: Duration = .seconds(5)

    /// How many delta statements run at once on a pool of `connections` before further deltas wait and are read
    /// together (`DeltaBatcher`): all but two, so that writes and pages always find a connection.
    package static func deltaStatements(_ connections: Int) -> Int { max(1, connections - 2) }
}
