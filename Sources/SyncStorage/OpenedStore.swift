import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import SyncAPI
import SyncPostgres
import SyncSQLite

/// A store ready to use, plus the client that must run in the service group (PostgreSQL only).
public struct OpenedStore: Sendable {
    /// The store's roles, one per consumer (`StoreRoles`): what the application and the commands take.
    public let roles: StoreRoles
    /// The whole store, for the tests of a backend (its conformance suite calls every requirement) and nothing else:
    /// visible only to `@_spi(StoreTesting) import SyncStorage`.
    @_spi(StoreTesting) public let store: any SyncStore
    /// Where the reads of sync answers go: a router over hot standbys (`--read-database`), else `store`.
    public var reads: any ItemReads
    /// Where those reads were served (standby, primary, fallback), when they go to a router; nil otherwise.
    public var readRoutes: ReadRouteCounts? = nil
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
        self.roles = StoreRoles(store)
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
    /// - `pool`: how many PostgreSQL connections, in the statements' pool and the snapshot answers' one.
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
                let hub = ChangeHub(timers: timers)
                return OpenedStore(store: try SQLiteStore(path: path, hub: hub), postgresClient: nil, hub: hub, listener: nil)
            } catch {
                throw DatabaseURLError("cannot open the SQLite database \(path): \(error.localizedDescription)")
            }
        case .postgres:
            // Not behind a pooler: PgBouncer refuses a startup parameter it does not know (operations.md says how to
            // set the same timeout on the database's role there).
            let client = try postgresClient(url, pool: pool, idleInTransaction: pooler ? nil : PoolSize.idleInTransactionTimeout, logger: logger)
            let hub = ChangeHub(revocationsLive: false, timers: timers)
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
                    url, pool: PoolSize(connections: snapshotConnections, snapshotConnections: nil), logger: logger)
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
                // The same pool as the primary's, from the same constructor (`postgresClient`).
                let readClient = try postgresClient(read, pool: PoolSize(connections: pool.connections, snapshotConnections: nil), logger: logger)
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
            let router = ReadRoutingStore(primary: store, standbys: standbys, timers: timers, logger: logger)
            opened.reads = router
            opened.readRoutes = router.routes
            opened.listenClient = listenClient
            opened.snapshotClient = store.snapshotClient
            opened.readClients = readClients
            opened.storeServices = store.services + standbys.flatMap(\.store.services)
            opened.standbyChecker = StandbyHealthChecker(standbys: standbys, maxLag: readMaxLag, timers: timers, logger: logger)
            return opened
        }
    }

    /// The one constructor of every pool an instance opens (statements, snapshot answers, `LISTEN`, standbys), so that
    /// what runs in tests is what `serve` runs. No minimum of open connections: PostgresNIO 1.33.2 traps on a lease
    /// when a database event leaves fewer than a minimum above zero (`PoolSize`).
    ///
    /// `idleInTransaction`: PostgreSQL ends a session of this pool that stays inside a transaction, waiting for this
    /// instance, longer than that (`idle_in_transaction_session_timeout`; nil: the server's setting). Only the
    /// statements' pool sets it (`PoolSize.idleInTransactionTimeout`): its transactions never wait for a client.
    package static func postgresClient(
        _ url: DatabaseURL, pool: PoolSize = PoolSize(), idleInTransaction: Duration? = nil, logger: Logger
    ) throws -> PostgresClient {
        guard case .postgres(let host, let port, let username, let password, let database, let requireTLS) = url else {
            throw DatabaseURLError("not a postgres:// URL")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: requireTLS ? .require(.makeClientConfiguration()) : .disable)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = pool.connections
        configuration.options.keepAliveBehavior = .init(frequency: PoolSize.keepAliveFrequency)
        configuration.options.minimumConnections = 0
        configuration.options.connectionIdleTimeout = PoolSize.idleTimeout
        if let idleInTransaction {
            let milliseconds = max(1, idleInTransaction.wholeNanoseconds / 1_000_000)
            configuration.options.additionalStartupParameters = [("idle_in_transaction_session_timeout", "\(milliseconds)")]
        }
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }
}
