import Foundation
import GRDB

/// The embedded default store: one SQLite file in WAL mode through GRDB, so `syncapi serve` needs no set-up.
///
/// SQLite has one writer at a time, which orders every write (and so every version) by itself; reads run
/// concurrently in WAL snapshots.
public struct SQLiteStore: SyncStore {
    let pool: DatabasePool

    /// Opens (creating if needed) the database file at `path`, creating its folder too.
    public init(path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            try db.executeCached(sql: "PRAGMA synchronous = NORMAL")
        }
        self.pool = try DatabasePool(path: path, configuration: configuration)
    }

    /// The snapshot that `withReadSnapshot` pinned for the current task, if any.
    @TaskLocal static var pinned: DatabaseSnapshot?

    /// Where reads go: the pinned snapshot, else the pool (each read its own WAL snapshot).
    var reader: any DatabaseReader { Self.pinned ?? pool }

    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let snapshot = try pool.makeSnapshot()
        return try await Self.$pinned.withValue(snapshot) { try await body() }
    }

    // MARK: Schema

    public func migrate() async throws {
        var migrator = DatabaseMigrator()
        for migration in EmbeddedMigrations.sqlite {
            let sql = migration.sql
            migrator.registerMigration(migration.name) { db in try db.execute(sql: sql) }
        }
        try migrator.migrate(pool)
        try await pool.write { db in
            try db.executeCached(
                sql: "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', ?) ON CONFLICT (key) DO NOTHING",
                arguments: [DatabaseIdentity.random()])
        }
    }

    public func databaseID() async throws -> String {
        try await reader.read { db in
            guard let id = try String.fetchOne(cached: db, sql: "SELECT value FROM syncapi_meta WHERE key = 'database_id'") else {
                throw SyncError.unavailable
            }
            return id
        }
    }

    public func ping() async throws {
        _ = try await reader.read { db in try Int64.fetchOne(cached: db, sql: "SELECT 1") }
    }

}
