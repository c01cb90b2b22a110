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
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        self.pool = try DatabasePool(path: path, configuration: configuration)
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
            try db.execute(
                sql: "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', ?) ON CONFLICT (key) DO NOTHING",
                arguments: [DatabaseIdentity.random()])
        }
    }

    public func databaseID() async throws -> String {
        try await pool.read { db in
            guard let id = try String.fetchOne(db, sql: "SELECT value FROM syncapi_meta WHERE key = 'database_id'") else {
                throw SyncError.unavailable
            }
            return id
        }
    }

    public func ping() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    // MARK: Accounts

    public func createFamily(id: String, name: String, account: NewAccount, nowMs: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO families (id, name, version, created_ms) VALUES (?, ?, 0, ?)", arguments: [id, name, nowMs])
            try Self.insertAccount(account, familyID: id, nowMs: nowMs, db: db)
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64) async throws {
        try await pool.write { db in
            guard try Int64.fetchOne(db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            try Self.insertAccount(account, familyID: familyID, nowMs: nowMs, db: db)
        }
    }

    private static func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, db: Database) throws {
        do {
            try db.execute(
                sql: """
                    INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    account.id, familyID, account.username, account.username.lowercased(), account.displayName,
                    account.passwordHash, nowMs,
                ])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw SyncError.usernameTaken
        }
        try storeRow(
            familyID: familyID, key: ItemKey(collection: Collections.accountsKey, id: account.id), deleted: false,
            body: account.profileBody, nowMs: nowMs, db: db)
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT id, family_id, password_hash FROM accounts WHERE username_key = ?", arguments: [usernameKey]
            ).map { AccountCredentials(accountID: $0[0], familyID: $0[1], passwordHash: $0[2]) }
        }
    }

    public func insertToken(hash: String, session: Session, expiresMs: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO tokens (hash, account_id, family_id, expires_ms) VALUES (?, ?, ?, ?)",
                arguments: [hash, session.accountID, session.familyID, expiresMs])
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> Session? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT account_id, family_id FROM tokens WHERE hash = ? AND expires_ms > ?",
                arguments: [tokenHash, nowMs]
            ).map { Session(accountID: $0[0], familyID: $0[1]) }
        }
    }

    public func deleteToken(hash: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM tokens WHERE hash = ?", arguments: [hash]) }
    }

    public func failedLogins(usernameKey: String) async throws -> (count: Int, windowStartMs: Int64)? {
        let row: (Int64, Int64)? = try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT failures, window_start_ms FROM login_failures WHERE username_key = ?", arguments: [usernameKey]
            ).map { ($0[0], $0[1]) }
        }
        return row.map { (Int($0.0), $0.1) }
    }

    public func recordFailedLogin(usernameKey: String, nowMs: Int64, windowMs: Int64) async throws {
        let windowOpen = nowMs - windowMs
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO login_failures (username_key, failures, window_start_ms) VALUES (?1, 1, ?2)
                    ON CONFLICT (username_key) DO UPDATE SET
                      failures = CASE WHEN window_start_ms <= ?3 THEN 1 ELSE failures + 1 END,
                      window_start_ms = CASE WHEN window_start_ms <= ?3 THEN ?2 ELSE window_start_ms END
                    """, arguments: [usernameKey, nowMs, windowOpen])
        }
    }

    public func clearFailedLogins(usernameKey: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM login_failures WHERE username_key = ?", arguments: [usernameKey])
        }
    }

    // MARK: Items

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await pool.read { db in try Self.fetchItem(familyID: familyID, key: key, db: db) }
    }

    private static func fetchItem(familyID: String, key: ItemKey, db: Database) throws -> StoredItem? {
        try Row.fetchOne(
            db,
            sql: "SELECT id, version, deleted, body FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND id = ?",
            arguments: [familyID, key.collection, key.parentID, key.id]
        ).map { StoredItem(id: $0[0], version: $0[1], deleted: $0[2], body: $0[3]) }
    }

    public func write(
        familyID: String, key: ItemKey, nowMs: Int64, plan: @escaping @Sendable (StoredItem?) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await pool.write { db in
            guard try Int64.fetchOne(db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            let existing = try Self.fetchItem(familyID: familyID, key: key, db: db)
            switch try plan(existing) {
            case .unchanged:
                return WriteOutcome(item: existing, changed: false)
            case .put(let body):
                let stored = try Self.storeRow(familyID: familyID, key: key, deleted: false, body: body, nowMs: nowMs, db: db)
                return WriteOutcome(item: stored, changed: true)
            case .delete:
                guard let existing, !existing.deleted else { return WriteOutcome(item: existing, changed: false) }
                let stored = try Self.storeRow(familyID: familyID, key: key, deleted: true, body: nil, nowMs: nowMs, db: db)
                return WriteOutcome(item: stored, changed: true)
            }
        }
    }

    /// Bumps the family counter and writes the row at the new version (inside the caller's transaction).
    @discardableResult
    private static func storeRow(
        familyID: String, key: ItemKey, deleted: Bool, body: String?, nowMs: Int64, db: Database
    ) throws -> StoredItem {
        guard
            let version = try Int64.fetchOne(
                db, sql: "UPDATE families SET version = version + 1 WHERE id = ? RETURNING version", arguments: [familyID])
        else { throw SyncError.unauthorized }
        try db.execute(
            sql: """
                INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
                  version = excluded.version, deleted = excluded.deleted, body = excluded.body, modified_ms = excluded.modified_ms
                """,
            arguments: [familyID, key.collection, key.parentID, key.id, version, deleted, body, nowMs])
        return StoredItem(id: key.id, version: version, deleted: deleted, body: body)
    }

    public func delta(familyID: String, collection: String, since: Int64?) async throws -> Delta {
        try await pool.read { db in
            // One read transaction: the counter and the rows come from the same snapshot.
            guard
                let family = try Row.fetchOne(
                    db, sql: "SELECT version, horizon FROM families WHERE id = ?", arguments: [familyID])
            else { throw SyncError.unauthorized }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, version, deleted, body FROM items
                    WHERE family_id = ? AND collection = ? AND parent_id = '' AND version > ? AND (? OR NOT deleted)
                    ORDER BY version
                    """,
                arguments: [familyID, collection, since ?? 0, since != nil]
            ).map { StoredItem(id: $0[0], version: $0[1], deleted: $0[2], body: $0[3]) }
            return Delta(version: family[0], horizon: family[1], rows: rows)
        }
    }
}
