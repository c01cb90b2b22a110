import Foundation
import GRDB
import SyncAPI

/// The embedded default store: one SQLite file in WAL mode through GRDB, so `syncapi serve` needs no set-up.
///
/// SQLite has one writer at a time, which orders every write (and so every version) by itself; reads run
/// concurrently in WAL snapshots.
public struct SQLiteStore: SyncStore {
    let pool: DatabasePool
    /// Connections that short reads run on in place when one is free (`InlineReaders`).
    let inline: InlineReaders
    /// Connections that hold a snapshot across reads, kept open between snapshots (`SnapshotReaders`).
    let snapshots: SnapshotReaders
    /// Where media files live: `media/` beside the database file.
    let mediaFolder: String
    /// Told of every change of a space's data once committed (`CommitNotices`), and of revoked tokens.
    let hub: ChangeHub?
    /// The deadline this copy's writes begin under (`bounded(by:)`): a request's; nil, none.
    package private(set) var budget: Deadline.Budget?

    public func bounded(by budget: Deadline.Budget?) -> SQLiteStore {
        var store = self
        store.budget = budget
        return store
    }

    /// Opens (creating if needed) the database file at `path`, creating its folder too.
    public init(path: String, hub: ChangeHub? = nil) throws {
        self.hub = hub
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        self.mediaFolder = (folder.isEmpty ? "." : folder) + "/media"
        if !folder.isEmpty {
            // Private: the database holds password hashes and every family's data.
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // The file and its WAL and shared-memory companions are created 0600 (umask 077 while opening).
        let previous = umask(0o077)
        defer { umask(previous) }
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // FULL: a write acknowledged to a client survives power loss, not only a killed process
            // (NORMAL in WAL mode may lose the last transactions on power loss). See docs/operations.md.
            try db.executeCached(sql: "PRAGMA synchronous = FULL")
        }
        self.pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB switches the writer to NORMAL when it turns WAL on, after `prepareDatabase`: set FULL again on the
        // writer, the one connection that commits (SQLiteDurabilityTests reads it back).
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        if let hub { pool.add(transactionObserver: CommitNotices(hub: hub), extent: .databaseLifetime) }
        // Opened once the pool has turned WAL on. One per core: a thread runs one read at a time.
        self.inline = try InlineReaders(path: path, count: max(2, ProcessInfo.processInfo.activeProcessorCount), configuration: configuration)
        // As many as the default budget of snapshot answers per instance (`--max-snapshot-answers-per-instance`).
        self.snapshots = SnapshotReaders(path: path, keep: 8, configuration: configuration)
        chmod(path, 0o600)
    }

    /// The snapshot this copy of the store reads from (`SQLiteSnapshot`): a connection of `snapshots` inside its read
    /// transaction.
    var pinned: DatabaseQueue?

    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SnapshotReads) async throws -> T) async throws -> T {
        let connection = try Self.mapped { try snapshots.begin() }
        defer { snapshots.end(connection) }
        return try await body(SQLiteSnapshot(store: self, connection: connection))
    }

    /// A write transaction of the single writer; operational failures become 503 `unavailable`.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        // A write that waited in the writer's queue past its request's deadline never begins (its answer was 503).
        let budget = self.budget
        do {
            return try await pool.write { db in
                try budget?.beginWrite()
                return try body(db)
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// A read from the pinned snapshot, else its own WAL snapshot (in place on a free inline reader, else through the
    /// pool); operational failures become 503 `unavailable`.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if let pinned {
            // The snapshot's connection serves its one holder: the read runs here, on the caller's thread, like an
            // inline read (a nested read of the orchestration runs in place: reentrant).
            do { return try pinned.unsafeReentrantRead(body) } catch { throw Self.mapped(error) }
        }
        if let result = inline.tryRead(body) {
            do { return try result.get() } catch { throw Self.mapped(error) }
        }
        do { return try await pool.read(body) } catch { throw Self.mapped(error) }
    }

    /// A read from its own WAL snapshot, whatever is pinned; operational failures become 503 `unavailable`.
    func fresh<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await pool.read(body) } catch { throw Self.mapped(error) }
    }

    static func mapped<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw mapped(error) }
    }

    /// The error a caller sees: busy or locked past the busy timeout, disk full, I/O error, read-only or unopenable
    /// file are 503 `unavailable` (protocol §8), never a 500; domain errors pass through.
    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_NOMEM,
            .SQLITE_PROTOCOL:
            return SyncError.unavailable
        default:
            return error
        }
    }

    // MARK: Schema

    public func migrate(upTo count: Int?) async throws {
        var migrator = DatabaseMigrator()
        for migration in SQLiteMigrations.all.prefix(count ?? .max) {
            let sql = migration.sql
            migrator.registerMigration(migration.name) { db in try db.execute(sql: sql) }
        }
        try migrator.migrate(pool)
        try await write { db in
            try db.executeCached(
                sql: "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', ?) ON CONFLICT (key) DO NOTHING",
                arguments: [DatabaseIdentity.random()])
        }
    }

    /// Reads a row of the database file (a bare `SELECT 1` would not touch it).
    public func ping() async throws {
        _ = try await read { db in try Int64.fetchOne(cached: db, sql: "SELECT count(*) FROM syncapi_meta") }
    }

}
