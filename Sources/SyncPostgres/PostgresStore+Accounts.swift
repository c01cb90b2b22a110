import Foundation
import Logging
import PostgresNIO
import SyncCore

/// Families, accounts, tokens and login throttling in PostgreSQL.
extension PostgresStore {

    public func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await conn.query(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))", logger: logger)
                let version = try await insertAccount(account, familyID: id, nowMs: nowMs, on: conn)
                if let familyItem {
                    _ = try await PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements).store(
                        familyItem, familyID: id, version: version, nowMs: nowMs)
                }
                try await insertMembership(spaceID: id, accountID: account.id, role: .owner, sinceVersion: 0, on: conn)
            }
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64, maxAccounts: Int) async throws {
        try await guarded {
            try await transaction { conn in
                guard
                    try await PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements).family(familyID, lock: true) != nil
                else {
                    throw SyncError.unauthorized
                }
                for try await count in try await conn.query(
                    "SELECT count(*) FROM accounts WHERE family_id = \(familyID)", logger: logger
                ).decode(Int64.self) where count >= maxAccounts {
                    throw SyncError.quotaExceeded("A family holds at most \(maxAccounts) accounts.")
                }
                let version = try await insertAccount(account, familyID: familyID, nowMs: nowMs, on: conn)
                try await insertMembership(spaceID: familyID, accountID: account.id, role: .member, sinceVersion: version, on: conn)
            }
        }
    }

    public func accounts(familyID: String) async throws -> [AccountRecord] {
        try await guarded {
            var out: [AccountRecord] = []
            for try await (id, username, name, owner) in try await client.query(
                """
                SELECT a.id, a.username, a.display_name, m.role = 'owner' FROM accounts a
                JOIN memberships m ON m.account_id = a.id AND m.space_id = a.family_id
                WHERE a.family_id = \(familyID) ORDER BY a.created_ms, a.seq
                """, logger: logger
            ).decode((String, String, String, Bool).self) {
                out.append(AccountRecord(id: id, username: username, displayName: name, owner: owner))
            }
            return out
        }
    }

    public func deleteAccount(
        accountID: String, familyID: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        try await guarded {
            try await transaction { conn in
                let statements = PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements)
                guard try await statements.family(familyID, lock: true) != nil else { throw SyncError.unauthorized }
                // The account's row is locked first: a login's new token (its foreign key check) then waits for this
                // transaction and fails after it, instead of committing a token that the account's delete would
                // then trip over (a foreign key violation, 23503, answered 500).
                var found = false
                for try await _ in try await conn.query(
                    "SELECT 1 FROM accounts WHERE id = \(accountID) AND family_id = \(familyID) FOR UPDATE", logger: logger)
                {
                    found = true
                }
                guard found else { return false }
                try await checkNotLastOwnerAnywhere(accountID: accountID, on: conn)
                // Every instance drops the cached tokens of its spaces and wakes their streams, which check theirs again.
                try await notifyRevocation(accountID: accountID, also: [familyID], on: conn)
                // Its tokens and memberships first: they reference the account.
                try await conn.query("DELETE FROM tokens WHERE account_id = \(accountID)", logger: logger)
                try await conn.query("DELETE FROM identities WHERE account_id = \(accountID)", logger: logger)
                try await conn.query(
                    """
                    DELETE FROM items WHERE family_id IN (SELECT space_id FROM memberships WHERE account_id = \(accountID))
                      AND collection = ANY(\(privateLists.map { "\($0)~\(accountID)" })::text[])
                    """, logger: logger)
                try await markEmptied(leaving: accountID, nowMs: nowMs, on: conn)
                try await conn.query("DELETE FROM memberships WHERE account_id = \(accountID)", logger: logger)
                var deleted = false
                for try await _ in try await conn.query(
                    "DELETE FROM accounts WHERE id = \(accountID) AND family_id = \(familyID) RETURNING id", logger: logger
                ).decode(String.self) {
                    deleted = true
                }
                guard deleted else { return false }
                var version: Int64?
                for key in AccountRecord.itemKeys(accountID, itemCollections) {
                    version = try await statements.store(RowWrite(key: key, body: nil), familyID: familyID, version: version, nowMs: nowMs)
                        .version
                }
                return true
            }
        }
    }

    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, on conn: PostgresConnection) async throws -> Int64 {
        let key = account.username.lowercased()
        do {
            // After every account of the family whatever this instance's clock says: the owner is the family's oldest
            // account, and a clock behind another instance's must not make a new member older.
            try await conn.query(
                """
                INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                VALUES (\(account.id), \(familyID), \(account.username), \(key), \(account.displayName), \(account.passwordHash),
                        GREATEST(\(nowMs), (SELECT COALESCE(MAX(created_ms) + 1, 0) FROM accounts WHERE family_id = \(familyID))))
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw SyncError.usernameTaken
        }
        let statements = PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements)
        var version: Int64?
        for row in account.rows {
            version = try await statements.store(row, familyID: familyID, version: version, nowMs: nowMs).version
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

    public func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws {
        try await guarded {
            do {
                let rows = try await client.query(
                    """
                    INSERT INTO tokens (hash, account_id, family_id, expires_ms)
                    SELECT \(hash), id, family_id, \(expiresMs) FROM accounts WHERE id = \(accountID) RETURNING 1
                    """, logger: logger)
                var inserted = false
                for try await _ in rows { inserted = true }
                guard inserted else { throw SyncError.invalidCredentials }
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
                // The account was deleted after its password was checked (a login racing `DELETE /accounts`): no
                // account, so no token.
                throw SyncError.invalidCredentials
            }
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> (session: AccountSession, expiresMs: Int64)? {
        try await guarded {
            // Never the pinned snapshot of a group: a token deleted since it began must not be found.
            try await client.withConnection { conn in
                let rows = try await conn.run(
                    PreparedStatements.Session(tokenHash: tokenHash, nowMs: nowMs), prepared: usesPreparedStatements, logger: logger)
                var found: (account: String, signup: String, expires: Int64)?
                var memberships: [SpaceMembership] = []
                for try await (account, signup, expires, space, role, since) in rows {
                    found = (account, signup, expires)
                    if let space, let role, let since {
                        memberships.append(SpaceMembership(spaceID: space, role: SpaceRole(stored: role), sinceVersion: since))
                    }
                }
                return found.map { (AccountSession(accountID: $0.account, signupSpaceID: $0.signup, memberships: memberships), $0.expires) }
            }
        }
    }

    public func deleteToken(hash: String) async throws {
        // The family's streams (on every instance) re-check their token at once.
        try await guarded {
            try await client.query(
                """
                WITH gone AS (DELETE FROM tokens WHERE hash = \(hash) RETURNING account_id)
                SELECT pg_notify(\(PostgresChangeListener.channel), \(PostgresChangeListener.revocationPrefix) || k.key)
                FROM gone, LATERAL (
                  SELECT space_id AS key FROM memberships WHERE account_id = gone.account_id UNION ALL SELECT '@' || gone.account_id
                ) k
                """, logger: logger)
        }
    }

    public func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        let windowOpen = nowMs - windowMs
        return try await guarded {
            // Keys in one order for every caller, so concurrent upserts lock rows in the same order.
            let rows = try await client.query(
                """
                INSERT INTO login_throttle (key, attempts, window_start_ms)
                SELECT k, 1, \(nowMs) FROM unnest(\(keys.sorted())::text[]) AS k ORDER BY k
                ON CONFLICT (key) DO UPDATE SET
                  attempts = CASE WHEN login_throttle.window_start_ms <= \(windowOpen)
                               THEN 1 + GREATEST(0, login_throttle.attempts
                                 * (2 * \(windowMs) - (\(nowMs) - login_throttle.window_start_ms)) / \(windowMs))
                               ELSE login_throttle.attempts + 1 END,
                  window_start_ms = CASE WHEN login_throttle.window_start_ms <= \(windowOpen) THEN \(nowMs)
                                    ELSE login_throttle.window_start_ms END
                RETURNING key, attempts, window_start_ms
                """, logger: logger)
            var out: [String: ThrottleWindow] = [:]
            for try await (key, attempts, start) in rows.decode((String, Int32, Int64).self) {
                out[key] = ThrottleWindow(attempts: Int(attempts), startMs: start)
            }
            return out
        }
    }

    public func rememberLogin(key: String, nowMs: Int64) async throws {
        try await guarded {
            try await client.query(
                """
                INSERT INTO login_throttle (key, attempts, window_start_ms) VALUES (\(key), 0, \(nowMs))
                ON CONFLICT (key) DO UPDATE SET window_start_ms = \(nowMs)
                """, logger: logger)
        }
    }

    public func lastLogin(key: String) async throws -> Int64? {
        try await guarded {
            for try await at in try await client.query("SELECT window_start_ms FROM login_throttle WHERE key = \(key)", logger: logger)
                .decode(Int64.self)
            {
                return at
            }
            return nil
        }
    }

    public func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        let keys = ([resetKey].compactMap { $0 } + uncountKeys).sorted()
        let reset = resetKey ?? ""  // no key is empty
        try await guarded {
            try await client.query(
                """
                UPDATE login_throttle SET attempts = CASE WHEN key = \(reset) THEN 0 ELSE GREATEST(attempts - 1, 0) END
                WHERE key = ANY(\(keys)::text[])
                """, logger: logger)
        }
    }

    public func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await guarded {
            let rows = try await client.query(
                "SELECT username, family_id, password_hash FROM accounts WHERE id = \(accountID)", logger: logger)
            for try await (username, family, hash) in rows.decode((String, String, String).self) {
                return (username, AccountCredentials(accountID: accountID, familyID: family, passwordHash: hash))
            }
            return nil
        }
    }

    public func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        try await guarded {
            try await transaction { conn in
                try await conn.query("UPDATE accounts SET password_hash = \(passwordHash) WHERE id = \(accountID)", logger: logger)
                try await conn.query(
                    "DELETE FROM tokens WHERE account_id = \(accountID) AND hash <> \(keepTokenHash)", logger: logger)
                try await notifyRevocation(accountID: accountID, also: [], on: conn)
            }
        }
    }

    public func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await guarded {
            var count = 0
            let rows = try await client.query(
                """
                WITH t AS (DELETE FROM tokens WHERE expires_ms <= \(nowMs) RETURNING 1),
                     i AS (DELETE FROM invitations WHERE expires_ms <= \(nowMs) OR uses_left <= 0 RETURNING 1),
                     l AS (DELETE FROM login_throttle WHERE window_start_ms
                           < CASE WHEN key LIKE 'k:%' THEN \(nowMs - LoginThrottleKeys.knownForMs) ELSE \(throttleBeforeMs) END
                           RETURNING 1)
                SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM i) + (SELECT count(*) FROM l)
                """, logger: logger)
            for try await n in rows.decode(Int64.self) { count = Int(n) }
            return count
        }
    }
}
