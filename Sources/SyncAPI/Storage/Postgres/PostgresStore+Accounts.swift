import Foundation
import Logging
import PostgresNIO

/// Families, accounts, tokens and login throttling in PostgreSQL.
extension PostgresStore {

    public func createFamily(id: String, name: String, familyBody: String, account: NewAccount, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await conn.query(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))", logger: logger)
                let version = try await insertAccount(account, familyID: id, nowMs: nowMs, on: conn)
                let family = RowWrite(key: ItemKey(collection: Collections.family.name, id: id), body: familyBody)
                try await storeRow(family, familyID: id, version: version, nowMs: nowMs, on: conn)
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

    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, on conn: PostgresConnection) async throws -> Int64 {
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
        var version: Int64?
        for row in account.rows {
            version = try await storeRow(row, familyID: familyID, version: version, nowMs: nowMs, on: conn).version
        }
        return version ?? 0
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
            try await read { conn in
                let rows = try await conn.query(
                    "SELECT account_id, family_id FROM tokens WHERE hash = \(tokenHash) AND expires_ms > \(nowMs)", logger: logger)
                for try await (account, family) in rows.decode((String, String).self) {
                    return Session(accountID: account, familyID: family)
                }
                return nil
            }
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
}
