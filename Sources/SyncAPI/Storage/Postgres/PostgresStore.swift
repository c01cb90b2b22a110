import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The production store: PostgreSQL through a pooled `PostgresClient`, every value bound.
///
/// Several server instances may share one database: writes serialize per family on the family row's lock,
/// reads take one statement's snapshot.
public struct PostgresStore: SyncStore {
    /// The pooled client; it must run in the application's service group (`client.run()`).
    public let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    // MARK: Schema

    public func migrate() async throws {
        try await guarded {
            try await transaction { conn in
                // One migrator at a time when several instances start together.
                try await conn.query("SELECT pg_advisory_xact_lock(7311562)", logger: logger)
                try await conn.query(
                    "CREATE TABLE IF NOT EXISTS syncapi_migrations (name TEXT PRIMARY KEY, applied_ms BIGINT NOT NULL)",
                    logger: logger)
                var applied = Set<String>()
                for try await name in try await conn.query("SELECT name FROM syncapi_migrations", logger: logger).decode(String.self) {
                    applied.insert(name)
                }
                for migration in EmbeddedMigrations.postgres where !applied.contains(migration.name) {
                    // The extended protocol takes one statement at a time.
                    for statement in Self.statements(of: migration.sql) {
                        try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    let now = WallClock.nowMs()
                    try await conn.query(
                        "INSERT INTO syncapi_migrations (name, applied_ms) VALUES (\(migration.name), \(now))", logger: logger)
                }
                let id = DatabaseIdentity.random()
                try await conn.query(
                    "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', \(id)) ON CONFLICT (key) DO NOTHING",
                    logger: logger)
            }
        }
    }

    /// The statements of a migration file: comment lines dropped, split at `;`.
    static func statements(of sql: String) -> [String] {
        let code = sql.split(separator: "\n").filter { !$0.trimmingPrefix(" ").hasPrefix("--") }.joined(separator: "\n")
        return code.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    public func databaseID() async throws -> String {
        try await guarded {
            let rows = try await client.query("SELECT value FROM syncapi_meta WHERE key = 'database_id'", logger: logger)
            for try await id in rows.decode(String.self) { return id }
            throw SyncError.unavailable
        }
    }

    public func ping() async throws {
        try await guarded { try await client.query("SELECT 1", logger: logger) }
    }

    // MARK: Accounts

    public func createFamily(id: String, name: String, account: NewAccount, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await conn.query(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))", logger: logger)
                try await insertAccount(account, familyID: id, nowMs: nowMs, on: conn)
            }
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await lockFamily(familyID, on: conn)
                try await insertAccount(account, familyID: familyID, nowMs: nowMs, on: conn)
            }
        }
    }

    private func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, on conn: PostgresConnection) async throws {
        let key = account.username.lowercased()
        do {
            try await conn.query(
                """
                INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                VALUES (\(account.id), \(familyID), \(account.username), \(key), \(account.displayName), \(account.passwordHash), \(nowMs))
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw SyncError.usernameTaken
        }
        let key2 = ItemKey(collection: Collections.accountsKey, id: account.id)
        try await storeRow(familyID: familyID, key: key2, deleted: false, body: account.profileBody, nowMs: nowMs, on: conn)
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await guarded {
            let rows = try await client.query(
                "SELECT id, family_id, password_hash FROM accounts WHERE username_key = \(usernameKey)", logger: logger)
            for try await (id, family, hash) in rows.decode((String, String, String).self) {
                return AccountCredentials(accountID: id, familyID: family, passwordHash: hash)
            }
            return nil
        }
    }

    public func insertToken(hash: String, session: Session, expiresMs: Int64) async throws {
        try await guarded {
            try await client.query(
                """
                INSERT INTO tokens (hash, account_id, family_id, expires_ms)
                VALUES (\(hash), \(session.accountID), \(session.familyID), \(expiresMs))
                """, logger: logger)
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> Session? {
        try await guarded {
            let rows = try await client.query(
                "SELECT account_id, family_id FROM tokens WHERE hash = \(tokenHash) AND expires_ms > \(nowMs)", logger: logger)
            for try await (account, family) in rows.decode((String, String).self) {
                return Session(accountID: account, familyID: family)
            }
            return nil
        }
    }

    public func deleteToken(hash: String) async throws {
        try await guarded { try await client.query("DELETE FROM tokens WHERE hash = \(hash)", logger: logger) }
    }

    public func failedLogins(usernameKey: String) async throws -> (count: Int, windowStartMs: Int64)? {
        try await guarded {
            let rows = try await client.query(
                "SELECT failures, window_start_ms FROM login_failures WHERE username_key = \(usernameKey)", logger: logger)
            for try await (count, start) in rows.decode((Int32, Int64).self) { return (Int(count), start) }
            return nil
        }
    }

    public func recordFailedLogin(usernameKey: String, nowMs: Int64, windowMs: Int64) async throws {
        let windowOpen = nowMs - windowMs
        try await guarded {
            try await client.query(
                """
                INSERT INTO login_failures (username_key, failures, window_start_ms) VALUES (\(usernameKey), 1, \(nowMs))
                ON CONFLICT (username_key) DO UPDATE SET
                  failures = CASE WHEN login_failures.window_start_ms <= \(windowOpen) THEN 1 ELSE login_failures.failures + 1 END,
                  window_start_ms = CASE WHEN login_failures.window_start_ms <= \(windowOpen) THEN \(nowMs)
                                    ELSE login_failures.window_start_ms END
                """, logger: logger)
        }
    }

    public func clearFailedLogins(usernameKey: String) async throws {
        try await guarded {
            try await client.query("DELETE FROM login_failures WHERE username_key = \(usernameKey)", logger: logger)
        }
    }

    // MARK: Items

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await guarded {
            let rows = try await client.query(
                """
                SELECT id, version, deleted, body FROM items
                WHERE family_id = \(familyID) AND collection = \(key.collection) AND parent_id = \(key.parentID) AND id = \(key.id)
                """, logger: logger)
            for try await (id, version, deleted, body) in rows.decode((String, Int64, Bool, String?).self) {
                return StoredItem(id: id, version: version, deleted: deleted, body: body)
            }
            return nil
        }
    }

    public func write(
        familyID: String, key: ItemKey, nowMs: Int64, plan: @escaping @Sendable (StoredItem?) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await guarded {
            try await transaction { conn in
                // Lock the family row first: it orders this write against every other write of the family.
                let rows = try await conn.query(
                    """
                    SELECT i.id, i.version, i.deleted, i.body FROM families f
                    LEFT JOIN items i ON i.family_id = f.id AND i.collection = \(key.collection)
                      AND i.parent_id = \(key.parentID) AND i.id = \(key.id)
                    WHERE f.id = \(familyID) FOR UPDATE OF f
                    """, logger: logger)
                var found = false
                var existing: StoredItem?
                for try await (id, version, deleted, body) in rows.decode((String?, Int64?, Bool?, String?).self) {
                    found = true
                    if let id, let version, let deleted { existing = StoredItem(id: id, version: version, deleted: deleted, body: body) }
                }
                guard found else { throw SyncError.unauthorized }
                switch try plan(existing) {
                case .unchanged:
                    return WriteOutcome(item: existing, changed: false)
                case .put(let body):
                    let stored = try await storeRow(familyID: familyID, key: key, deleted: false, body: body, nowMs: nowMs, on: conn)
                    return WriteOutcome(item: stored, changed: true)
                case .delete:
                    guard let existing, !existing.deleted else { return WriteOutcome(item: existing, changed: false) }
                    let stored = try await storeRow(familyID: familyID, key: key, deleted: true, body: nil, nowMs: nowMs, on: conn)
                    return WriteOutcome(item: stored, changed: true)
                }
            }
        }
    }

    /// Bumps the family counter and writes the row at the new version, in one statement.
    @discardableResult
    private func storeRow(
        familyID: String, key: ItemKey, deleted: Bool, body: String?, nowMs: Int64, on conn: PostgresConnection
    ) async throws -> StoredItem {
        let rows = try await conn.query(
            """
            WITH v AS (UPDATE families SET version = version + 1 WHERE id = \(familyID) RETURNING version)
            INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms)
            SELECT \(familyID), \(key.collection), \(key.parentID), \(key.id), v.version, \(deleted), \(body), \(nowMs) FROM v
            ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
              version = EXCLUDED.version, deleted = EXCLUDED.deleted, body = EXCLUDED.body, modified_ms = EXCLUDED.modified_ms
            RETURNING version
            """, logger: logger)
        for try await version in rows.decode(Int64.self) {
            return StoredItem(id: key.id, version: version, deleted: deleted, body: body)
        }
        throw SyncError.unauthorized
    }

    private func lockFamily(_ familyID: String, on conn: PostgresConnection) async throws {
        let rows = try await conn.query("SELECT version FROM families WHERE id = \(familyID) FOR UPDATE", logger: logger)
        for try await _ in rows.decode(Int64.self) { return }
        throw SyncError.unauthorized
    }

    public func delta(familyID: String, collection: String, since: Int64?) async throws -> Delta {
        try await guarded {
            // One statement: the counter and the rows come from the same snapshot.
            let after = since ?? 0
            let includeDeleted = since != nil
            let rows = try await client.query(
                """
                SELECT f.version, f.horizon, i.id, i.version, i.deleted, i.body FROM families f
                LEFT JOIN items i ON i.family_id = f.id AND i.collection = \(collection) AND i.parent_id = ''
                  AND i.version > \(after) AND (\(includeDeleted) OR NOT i.deleted)
                WHERE f.id = \(familyID)
                ORDER BY i.version
                """, logger: logger)
            var version: Int64?
            var horizon: Int64 = 0
            var items: [StoredItem] = []
            for try await (fv, fh, id, iv, deleted, body) in rows.decode((Int64, Int64, String?, Int64?, Bool?, String?).self) {
                version = fv
                horizon = fh
                if let id, let iv, let deleted { items.append(StoredItem(id: id, version: iv, deleted: deleted, body: body)) }
            }
            guard let version else { throw SyncError.unauthorized }
            return Delta(version: version, horizon: horizon, rows: items)
        }
    }

    // MARK: Plumbing

    /// Runs `body` in one transaction on one pooled connection, rolling back when it throws.
    private func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { conn in
            try await conn.query("BEGIN", logger: logger)
            do {
                let value = try await body(conn)
                try await conn.query("COMMIT", logger: logger)
                return value
            } catch {
                _ = try? await conn.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// How long a call may wait for the database (mostly for a pooled connection) before answering 503.
    static let deadline = Duration.seconds(10)

    /// Maps lost connections, and calls that wait past the deadline, to 503 `unavailable`; domain errors pass
    /// through; the rest is logged and rethrown.
    @discardableResult
    private func guarded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: Self.deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else { throw SyncError.unavailable }
                return value
            }
        } catch let error as SyncError {
            if error == .unavailable { logger.warning("database did not answer within \(Self.deadline)") }
            throw error
        } catch let error as PSQLError {
            if error.serverInfo == nil {
                logger.warning("database unreachable", metadata: ["error": "\(String(reflecting: error))"])
                throw SyncError.unavailable
            }
            logger.error("database error", metadata: ["error": "\(String(reflecting: error))"])
            throw error
        }
    }
}
