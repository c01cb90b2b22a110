import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

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

/// The PostgreSQL pool of one instance. `openAtStart` (what `serve` does) keeps every connection open from the start: a
/// connection opened under load parses and plans its statements for the first time there, which makes its requests the
/// slowest; connections past the minimum are closed when idle, and reopened by the next burst, so a pool that may
/// shrink pays that again after each quiet minute.
public struct PoolSize: Sendable {
    public var connections: Int
    public var openAtStart: Bool
    /// Connections of a second pool for snapshot answers only (`PostgresStore.snapshotClient`); nil: none, they
    /// share the first.
    public var snapshotConnections: Int?
    public init(connections: Int = 20, openAtStart: Bool = false, snapshotConnections: Int? = nil) {
        self.connections = connections
        self.openAtStart = openAtStart
        self.snapshotConnections = snapshotConnections
    }

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
    static func deltaStatements(_ connections: Int) -> Int { max(1, connections - 2) }
}

/// A store ready to use, plus the client that must run in the service group (PostgreSQL only).
public struct OpenedStore: Sendable {
    public let store: any SyncStore
    /// Where the reads of sync answers go: a router over hot standbys (`--read-database`), else `store`.
    public var reads: any ItemReads
    /// Where media bytes live: the same database (chunks in PostgreSQL, files beside the SQLite file).
    public let media: any MediaStore
    /// Run this (`run()`) for the store to work; nil for SQLite.
    public let postgresClient: PostgresClient?
    /// Wakes live change streams when their family's data moves.
    public let hub: ChangeHub
    /// What feeds the hub on PostgreSQL (one `LISTEN` connection), to run as a service; nil for SQLite, whose write
    /// path feeds it.
    public let listener: PostgresChangeListener?
    /// The client of the `LISTEN` connection when it is not the store's (`--listen-database`: a pooler in between).
    public var listenClient: PostgresClient? = nil
    /// The clients of the hot standbys (`--read-database`), to run as services; empty without any.
    public var readClients: [PostgresClient] = []
    /// Watches the hot standbys, to run as a service; nil without any.
    public var standbyChecker: StandbyHealthChecker? = nil

    /// The client of the snapshot answers' own pool, if they have one (`PoolSize.snapshotConnections`).
    public var snapshotClient: PostgresClient? = nil
    /// The stores' own work, to run as services beside the clients (the primary's and each standby's delta batcher).
    public var storeServices: [any Service] = []

    init(store: some SyncStore & MediaStore, postgresClient: PostgresClient?, hub: ChangeHub, listener: PostgresChangeListener?) {
        self.store = store
        self.reads = store
        self.media = store
        self.postgresClient = postgresClient
        self.hub = hub
        self.listener = listener
    }

    /// Runs the PostgreSQL clients until cancelled (returns at once for SQLite).
    public func runClient() async {
        await withTaskGroup(of: Void.self) { group in
            if let postgresClient { group.addTask { await postgresClient.run() } }
            if let listenClient { group.addTask { await listenClient.run() } }
            if let snapshotClient { group.addTask { await snapshotClient.run() } }
            for client in readClients { group.addTask { await client.run() } }
            for service in storeServices { group.addTask { try? await service.run() } }
        }
    }

    /// Opens the database a URL names (SQLite file created if needed; PostgreSQL client not yet running).
    ///
    /// - `pooler`: the URL is a connection pooler in transaction mode (PgBouncer): no named prepared statement (a
    ///   pooled server connection may be another one at the next transaction), and `LISTEN`, which needs one session,
    ///   goes to `listen`, a direct URL of the same database, which is then required.
    /// - `pool`: how many PostgreSQL connections, and whether they all open at start.
    /// - `reads`: hot standbys of the database (`--read-database`, protocol §13) for the reads that may go to one,
    ///   left out while lagging more than `readMaxLag`.
    public static func open(
        _ url: DatabaseURL, deadline: Duration = .seconds(10), pooler: Bool = false, listen: DatabaseURL? = nil,
        pool: PoolSize = PoolSize(), reads: [DatabaseURL] = [], readMaxLag: Duration = .seconds(5), timers: TimerWheel, logger: Logger
    ) throws -> OpenedStore {
        switch url {
        case .sqlite(let path):
            guard reads.isEmpty else {
                throw DatabaseURLError("--read-database names PostgreSQL hot standbys: it needs a postgres:// --database, not SQLite")
            }
            guard !pooler, listen == nil else { throw DatabaseURLError("--database-pooler and --listen-database are for PostgreSQL") }
            do {
                let hub = ChangeHub()
                return OpenedStore(store: try SQLiteStore(path: path, hub: hub), postgresClient: nil, hub: hub, listener: nil)
            } catch {
                throw DatabaseURLError("cannot open the SQLite database \(path): \(error.localizedDescription)")
            }
        case .postgres:
            let client = try postgresClient(url, pool: pool, logger: logger)
            let hub = ChangeHub(revocationsLive: false)
            var listenClient: PostgresClient?
            if let listen {
                guard case .postgres = listen else { throw DatabaseURLError("--listen-database must be a postgres:// URL") }
                listenClient = try postgresClient(listen, logger: logger)
            }
            var store = PostgresStore(
                client: client, logger: logger, timers: timers, deadline: deadline, deltaStatements: PoolSize.deltaStatements(pool.connections))
            store.usesPreparedStatements = !pooler
            if let snapshotConnections = pool.snapshotConnections {
                store.snapshotClient = try postgresClient(
                    url, pool: PoolSize(connections: snapshotConnections, openAtStart: pool.openAtStart), logger: logger)
            }
            // Behind a pooler with no direct URL there is no LISTEN (`serve` refuses that; `migrate` needs none).
            let writes = store
            let expectedDatabaseID: (@Sendable () async throws -> String)? =
                listenClient == nil ? nil : { @Sendable in try await writes.databaseID() }
            let listener =
                pooler && listen == nil
                ? nil
                : PostgresChangeListener(
                    client: listenClient ?? client, pings: client, expectedDatabaseID: expectedDatabaseID, hub: hub, logger: logger,
                    timers: timers)
            guard !reads.isEmpty else {
                var opened = OpenedStore(store: store, postgresClient: client, hub: hub, listener: listener)
                opened.storeServices = store.services
                opened.listenClient = listenClient
                opened.snapshotClient = store.snapshotClient
                return opened
            }
            var standbys: [Standby] = []
            var readClients: [PostgresClient] = []
            for read in reads {
                guard case .postgres(let host, let port, _, _, _, _) = read else {
                    throw DatabaseURLError("--read-database must be a postgres:// URL")
                }
                // Opened whole at start, like the primary's: a pooled connection above the minimum also arms an idle
                // timer (60 s) each time it parks, whose sleep is held like the keep-alive's (`keepAliveFrequency`).
                let readClient = try postgresClient(
                    read, pool: PoolSize(connections: pool.connections, openAtStart: true), logger: logger)
                var readStore = PostgresStore(
                    client: readClient, logger: logger, timers: timers, deadline: deadline,
                    deltaStatements: PoolSize.deltaStatements(pool.connections))
                // No named prepared statements: one prepared before the standby replayed the schema (or a migration) fails,
                // and PostgresNIO keeps that failure for the connection's life.
                readStore.usesPreparedStatements = false
                standbys.append(Standby(store: readStore, name: "\(host):\(port)"))
                readClients.append(readClient)
            }
            var opened = OpenedStore(store: store, postgresClient: client, hub: hub, listener: listener)
            opened.reads = ReadRoutingStore(primary: store, standbys: standbys, timers: timers, logger: logger)
            opened.listenClient = listenClient
            opened.snapshotClient = store.snapshotClient
            opened.readClients = readClients
            opened.storeServices = store.services + standbys.flatMap(\.store.services)
            opened.standbyChecker = StandbyHealthChecker(standbys: standbys, maxLag: readMaxLag, timers: timers, logger: logger)
            return opened
        }
    }

    static func postgresClient(_ url: DatabaseURL, pool: PoolSize = PoolSize(), logger: Logger) throws -> PostgresClient {
        guard case .postgres(let host, let port, let username, let password, let database, let requireTLS) = url else {
            throw DatabaseURLError("not a postgres:// URL")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: requireTLS ? .require(.makeClientConfiguration()) : .disable)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = pool.connections
        configuration.options.keepAliveBehavior = .init(frequency: PoolSize.keepAliveFrequency)
        if pool.openAtStart { configuration.options.minimumConnections = pool.connections }
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }
}
