import Foundation
import GRDB
import SyncCore

/// Families, accounts, tokens and login throttling in SQLite.
extension SQLiteStore {

    public func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await write { db in
            try db.executeCached(
                sql: "INSERT INTO families (id, name, version, created_ms) VALUES (?, ?, 0, ?)", arguments: [id, name, nowMs])
            let version = try Self.insertAccount(account, familyID: id, nowMs: nowMs, db: db)
            if let familyItem { try SQLiteItemStatements(db: db).store(familyItem, familyID: id, version: version, nowMs: nowMs) }
            try Self.insertMembership(spaceID: id, accountID: account.id, role: .owner, sinceVersion: 0, db: db)
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64, maxAccounts: Int) async throws {
        try await write { db in
            guard try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            let count = try Int64.fetchOne(cached: db, sql: "SELECT count(*) FROM accounts WHERE family_id = ?", arguments: [familyID]) ?? 0
            guard count < maxAccounts else { throw SyncError.quotaExceeded("A family holds at most \(maxAccounts) accounts.") }
            let version = try Self.insertAccount(account, familyID: familyID, nowMs: nowMs, db: db)
            try Self.insertMembership(spaceID: familyID, accountID: account.id, role: .member, sinceVersion: version, db: db)
        }
    }

    public func accounts(familyID: String) async throws -> [AccountRecord] {
        try await read { db in
            try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT a.id, a.username, a.display_name, m.role = 'owner' FROM accounts a
                    JOIN memberships m ON m.account_id = a.id AND m.space_id = a.family_id
                    WHERE a.family_id = ? ORDER BY a.created_ms, a.rowid
                    """, arguments: [familyID]
            ).map { AccountRecord(id: $0[0], username: $0[1], displayName: $0[2], owner: $0[3]) }
        }
    }

    public func deleteAccount(
        accountID: String, familyID: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        let revoked = try await write { db -> [String]? in
            guard
                try Int64.fetchOne(cached: db, sql: "SELECT 1 FROM accounts WHERE id = ? AND family_id = ?", arguments: [accountID, familyID])
                    != nil
            else { return nil }
            try Self.checkNotLastOwnerAnywhere(accountID: accountID, db: db)
            let spaces = try Self.spaceIDs(accountID: accountID, db: db)
            for space in spaces {
                for list in privateLists {
                    try db.executeCached(
                        sql: "DELETE FROM items WHERE family_id = ? AND collection = ?", arguments: [space, "\(list)~\(accountID)"])
                }
            }
            // Its tokens and memberships first: they reference the account.
            try db.executeCached(sql: "DELETE FROM tokens WHERE account_id = ?", arguments: [accountID])
            try db.executeCached(sql: "DELETE FROM identities WHERE account_id = ?", arguments: [accountID])
            try Self.markEmptied(leaving: accountID, nowMs: nowMs, db: db)
            try db.executeCached(sql: "DELETE FROM memberships WHERE account_id = ?", arguments: [accountID])
            try db.executeCached(sql: "DELETE FROM accounts WHERE id = ? AND family_id = ?", arguments: [accountID, familyID])
            let statements = SQLiteItemStatements(db: db)
            let version = try statements.bump(familyID: familyID)
            for key in AccountRecord.itemKeys(accountID, itemCollections) {
                _ = try statements.store(RowWrite(key: key, body: nil), familyID: familyID, version: version, nowMs: nowMs)
            }
            return Set(spaces + [familyID]).sorted() + [AccountSession.accountKey(accountID)]
        }
        // The cached tokens of its spaces go, and their streams wake and check theirs again.
        guard let revoked else { return false }
        revoke(revoked)
        return true
    }

    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    static func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, db: Database) throws -> Int64 {
        do {
            try db.executeCached(
                sql: """
                    INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, max(?7, (SELECT coalesce(max(created_ms) + 1, 0) FROM accounts WHERE family_id = ?2)))
                    """,
                arguments: [
                    account.id, familyID, account.username, account.username.lowercased(), account.displayName,
                    account.passwordHash, nowMs,
                ])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw SyncError.usernameTaken
        }
        let statements = SQLiteItemStatements(db: db)
        let version = try statements.bump(familyID: familyID)
        for row in account.rows {
            try statements.store(row, familyID: familyID, version: version, nowMs: nowMs)
        }
        return version
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT id, family_id, password_hash FROM accounts WHERE username_key = ?", arguments: [usernameKey]
            ).map { AccountCredentials(accountID: $0[0], familyID: $0[1], passwordHash: $0[2]) }
        }
    }

    public func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws {
        try await write { db in
            do {
                try db.executeCached(
                    sql: "INSERT INTO tokens (hash, account_id, family_id, expires_ms) SELECT ?, id, family_id, ? FROM accounts WHERE id = ?",
                    arguments: [hash, expiresMs, accountID])
                guard db.changesCount == 1 else { throw SyncError.invalidCredentials }
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
                // The account was deleted after its password was checked (a login racing `DELETE /accounts`).
                throw SyncError.invalidCredentials
            }
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> (session: AccountSession, expiresMs: Int64)? {
        // Never the pinned snapshot of a group: a token deleted since it began must not be found.
        try await fresh { db in
            let rows = try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT t.account_id, a.family_id, t.expires_ms, m.space_id, m.role, m.since_version
                    FROM tokens t JOIN accounts a ON a.id = t.account_id
                    LEFT JOIN memberships m ON m.account_id = t.account_id
                    WHERE t.hash = ? AND t.expires_ms > ? ORDER BY m.rowid
                    """, arguments: [tokenHash, nowMs])
            guard let first = rows.first else { return nil }
            let memberships = rows.compactMap { row -> SpaceMembership? in
                guard let space: String = row[3] else { return nil }
                return SpaceMembership(spaceID: space, role: SpaceRole(stored: row[4]), sinceVersion: row[5])
            }
            return (AccountSession(accountID: first[0], signupSpaceID: first[1], memberships: memberships), first[2])
        }
    }

    public func deleteToken(hash: String) async throws {
        let keys = try await write { db -> [String] in
            guard let account = try String.fetchOne(cached: db, sql: "DELETE FROM tokens WHERE hash = ? RETURNING account_id", arguments: [hash])
            else { return [] }
            return try Self.spaceIDs(accountID: account, db: db) + [AccountSession.accountKey(account)]
        }
        // Its streams re-check their token at once.
        revoke(keys)
    }

    public func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        let windowOpen = nowMs - windowMs
        return try await write { db in
            var out: [String: ThrottleWindow] = [:]
            for key in keys.sorted() {
                let row = try Row.fetchOne(
                    cached: db,
                    sql: """
                        INSERT INTO login_throttle (key, attempts, window_start_ms) VALUES (?1, 1, ?2)
                        ON CONFLICT (key) DO UPDATE SET
                          attempts = CASE WHEN window_start_ms <= ?3
                                       THEN 1 + max(0, attempts * (2 * ?4 - (?2 - window_start_ms)) / ?4)
                                       ELSE attempts + 1 END,
                          window_start_ms = CASE WHEN window_start_ms <= ?3 THEN ?2 ELSE window_start_ms END
                        RETURNING attempts, window_start_ms
                        """, arguments: [key, nowMs, windowOpen, windowMs])
                if let row { out[key] = ThrottleWindow(attempts: row[0], startMs: row[1]) }
            }
            return out
        }
    }

    public func rememberLogin(key: String, nowMs: Int64) async throws {
        try await write { db in
            try db.executeCached(
                sql: """
                    INSERT INTO login_throttle (key, attempts, window_start_ms) VALUES (?1, 0, ?2)
                    ON CONFLICT (key) DO UPDATE SET window_start_ms = ?2
                    """, arguments: [key, nowMs])
        }
    }

    public func lastLogin(key: String) async throws -> Int64? {
        try await read { db in
            try Int64.fetchOne(cached: db, sql: "SELECT window_start_ms FROM login_throttle WHERE key = ?", arguments: [key])
        }
    }

    public func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        try await write { db in
            if let resetKey {
                try db.executeCached(sql: "UPDATE login_throttle SET attempts = 0 WHERE key = ?", arguments: [resetKey])
            }
            for key in uncountKeys {
                try db.executeCached(sql: "UPDATE login_throttle SET attempts = max(attempts - 1, 0) WHERE key = ?", arguments: [key])
            }
        }
    }

    public func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT username, family_id, password_hash FROM accounts WHERE id = ?", arguments: [accountID]
            ).map { ($0[0], AccountCredentials(accountID: accountID, familyID: $0[1], passwordHash: $0[2])) }
        }
    }

    public func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        let keys = try await write { db in
            try db.executeCached(sql: "UPDATE accounts SET password_hash = ? WHERE id = ?", arguments: [passwordHash, accountID])
            try db.executeCached(sql: "DELETE FROM tokens WHERE account_id = ? AND hash <> ?", arguments: [accountID, keepTokenHash])
            return try Self.spaceIDs(accountID: accountID, db: db) + [AccountSession.accountKey(accountID)]
        }
        revoke(keys)
    }

    public func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await write { db in
            try db.executeCached(sql: "DELETE FROM tokens WHERE expires_ms <= ?", arguments: [nowMs])
            var count = db.changesCount
            try db.executeCached(sql: "DELETE FROM invitations WHERE expires_ms <= ? OR uses_left <= 0", arguments: [nowMs])
            count += db.changesCount
            try db.executeCached(
                sql: "DELETE FROM login_throttle WHERE window_start_ms < CASE WHEN key LIKE 'k:%' THEN ? ELSE ? END",
                arguments: [nowMs - LoginThrottleKeys.knownForMs, throttleBeforeMs])
            count += db.changesCount
            return count
        }
    }
}
