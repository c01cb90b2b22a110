import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import SyncAPI

/// The production store: PostgreSQL through a pooled `PostgresClient`, every value bound.
///
/// Several server instances may share one database: writes serialize per family on the family row's lock,
/// reads take one statement's snapshot.
public struct PostgresStore: SyncStore {
    /// The pooled client; it must run in the application's service group (`client.run()`).
    public let client: PostgresClient
    /// The pool of snapshot answers (full lists and groups that stream while their client downloads), when they have
    /// their own (`serve`): an answer held open by a slow phone then never takes a connection of `client`, which can
    /// stay as small as the database's cores want (more busy connections than cores only queue in the database's
    /// scheduler, where the slowest requests wait longest). Nil: they share `client`.
    public var snapshotClient: PostgresClient?
    /// Where snapshot answers take their connection.
    var answersClient: PostgresClient { snapshotClient ?? client }
    /// Named prepared statements for the hot queries; off behind a pooler in transaction mode (`--database-pooler`),
    /// where the next transaction may run on another server connection that never saw them.
    public var usesPreparedStatements = true
    let logger: Logger
    /// How long a call may wait for the database (mostly for a pooled connection) before answering 503.
    let deadline: Duration
    /// The timers of its time limits.
    let timers: TimerWheel

    /// The deadline this copy's calls run under (`bounded(by:)`): a request's; nil, each call under one of its own.
    package private(set) var budget: Deadline.Budget?

    public func bounded(by budget: Deadline.Budget?) -> PostgresStore {
        var store = self
        store.budget = budget
        return store
    }

    /// Reads concurrent deltas together when they would wait for a connection (`DeltaBatcher`).
    let deltaBatcher: DeltaBatcher
    /// What must run for this store to answer (as services of the application): the workers of its delta batcher.
    public var services: [any Service] { [deltaBatcher] }

    /// `deltaStatements`: how many delta statements run at once before further deltas wait and are read together
    /// (`DeltaBatcher`); the pool's other connections stay free for everything else.
    public init(client: PostgresClient, logger: Logger, timers: TimerWheel, deadline: Duration = .seconds(10), deltaStatements: Int = 4) {
        self.timers = timers
        self.client = client
        self.logger = logger
        self.deadline = deadline
        deltaBatcher = DeltaBatcher(client: client, logger: logger, timers: timers, deadline: deadline, maxRunning: deltaStatements)
    }

    /// The connection, inside a REPEATABLE READ transaction, this copy of the store reads on (`PostgresSnapshot`).
    var pinned: PostgresConnection?
    /// Deltas read ahead from the pinned snapshot (`prefetchingDeltas`), by the call they answer.
    var prefetched: [DeltaRequest: Delta] = [:]

    /// The body runs under one deadline of its own, `snapshotRunLimit`, not the database deadline: it writes its answer
    /// as its client reads it (a group's run of reads), and a phone on a slow link may take longer than the database
    /// deadline to read it. Under that one deadline its statements run inline, so none is left running on the pinned
    /// connection once the run gave it back; a reader that stops is bounded by the answer's stall limit, and a caller
    /// that goes away (its answer cancelled, the application stopping) leaves at once.
    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SnapshotReads) async throws -> T) async throws -> T {
        try await guarded(within: Self.snapshotRunLimit) { budget in
            try await snapshot(on: answersClient) { conn in
                try await body(PostgresSnapshot(store: self.bounded(by: budget), connection: conn))
            }
        }
    }

    /// How long a run of reads may hold its snapshot (`withReadSnapshot`) when no request bounds it: as long as a phone
    /// reading at the snapshot pace (`SnapshotBudget`) takes to read a family's whole quota, and more.
    static let snapshotRunLimit: Duration = .seconds(6 * 3600)

    /// Runs reads on the pinned snapshot's connection, else on a pooled connection.
    func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        if let pinned { return try await body(pinned) }
        return try await client.withConnection { conn in try await body(conn) }
    }

    /// Runs several reads in one snapshot: the pinned one, else a new REPEATABLE READ transaction.
    func snapshotRead<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        if let pinned { return try await body(pinned) }
        return try await snapshot(on: client, body)
    }

    // MARK: Schema

    public func migrate(upTo count: Int?) async throws {
        // At start the database may be coming up too (a deploy, a busy host): it has 30 s to answer. Once reached, a
        // migration may wait for other instances' migrations and take its time.
        try await guarded(within: max(deadline, .seconds(30))) { _ in try await client.statement("SELECT 1", logger: logger) }
        try await guarded(within: .seconds(300)) { budget in
            try await transaction(under: budget) { conn in
                // One migrator at a time when several instances start together.
                try await conn.statement("SELECT pg_advisory_xact_lock(7311562)", logger: logger)
                try await conn.statement(
                    "CREATE TABLE IF NOT EXISTS syncapi_migrations (name TEXT PRIMARY KEY, applied_ms BIGINT NOT NULL)",
                    logger: logger)
                var applied = Set<String>()
                for try await name in try await conn.statement("SELECT name FROM syncapi_migrations", logger: logger).decode(String.self) {
                    applied.insert(name)
                }
                for migration in PostgresMigrations.all.prefix(count ?? .max) where !applied.contains(migration.name) {
                    // The extended protocol takes one statement at a time.
                    for statement in SQLScript.statements(of: migration.sql) {
                        try await conn.statement(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    let now = WallClock.nowMs()
                    try await conn.statement(
                        "INSERT INTO syncapi_migrations (name, applied_ms) VALUES (\(migration.name), \(now))", logger: logger)
                }
                let id = DatabaseIdentity.random()
                try await conn.statement(
                    "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', \(id)) ON CONFLICT (key) DO NOTHING",
                    logger: logger)
            }
        }
    }

    /// Ready means writable: a server that failed over to a read-only standby answers 503 like one that is gone.
    public func ping() async throws {
        let standby = try await guarded { _ in
            try await client.statement("SELECT pg_is_in_recovery()", logger: logger) { rows in
                for try await inRecovery in rows.decode(Bool.self) { return inRecovery }
                return false
            }
        }
        if standby { throw SyncError.unavailable }
    }

    // MARK: Plumbing

    /// Runs `body` in one write transaction on one pooled connection (`PostgresConnection.transaction`: `COMMIT` when
    /// it returns, `ROLLBACK` when it throws), which begins only within the deadline of `budget` (a 503 is never
    /// followed by a late commit). Read-only snapshots are `snapshot(on:)`.
    func transaction<T: Sendable>(under budget: Deadline.Budget, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { conn in
            let write = try budget.beginWrite(onAbandon: { _ = conn.close() as EventLoopFuture<Void> })
            defer { budget.endWrite(write) }
            return try await conn.transaction(logger: logger) { conn in try await body(conn) }
        }
    }

    /// Runs `body` in one transaction on `conn` (already leased).
    func inTransaction<T: Sendable>(on conn: PostgresConnection, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await conn.transaction(logger: logger) { conn in try await body(conn) }
    }

    /// Every store call goes through here: the call is answered within the deadline whatever the database does
    /// (`Deadline`), a transaction that failed on a serialization failure or a deadlock is run again (nothing of it
    /// was committed), and every operational failure is 503 `unavailable`, never a 500 (protocol §8).
    @discardableResult
    /// The body gets the budget of the deadline it runs under (this copy's, else its own), for the writes it begins.
    func guarded<T: Sendable>(
        within limit: Duration? = nil, _ body: @escaping @Sendable (Deadline.Budget) async throws -> T
    ) async throws -> T {
        let logger = self.logger
        return try await Deadline.run(within: limit ?? deadline, timers: timers, holding: budget) { budget in
            var attempt = 0
            while true {
                do {
                    return try await body(budget)
                } catch {
                    let failure = PostgresFailure(error)
                    attempt += 1
                    if failure == .retry, attempt < 4 {
                        try await Task.sleep(for: .milliseconds(5 << attempt))
                        continue
                    }
                    throw failure.domainError(for: error, logger: logger)
                }
            }
        }
    }
}
