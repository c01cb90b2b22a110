import Foundation
import GRDB
import SyncCore

/// Accounts, tokens, identities, login throttling, spaces and memberships in SQLite: the statements shared with
/// PostgreSQL (`AccountStatements`, `SpaceStatements`), and the session lookup.
extension SQLiteStore {
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

    public func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await AccountStatements(self).createFamily(id: id, name: name, familyItem: familyItem, account: account, nowMs: nowMs)
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64, maxAccounts: Int) async throws {
        try await AccountStatements(self).createAccount(account, familyID: familyID, nowMs: nowMs, maxAccounts: maxAccounts)
    }

    public func accounts(familyID: String) async throws -> [AccountRecord] { try await AccountStatements(self).accounts(familyID: familyID) }

    public func deleteAccount(
        accountID: String, familyID: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        try await AccountStatements(self).deleteAccount(
            accountID: accountID, familyID: familyID, itemCollections: itemCollections, privateLists: privateLists, nowMs: nowMs)
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await AccountStatements(self).credentials(usernameKey: usernameKey)
    }

    public func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await AccountStatements(self).credentials(accountID: accountID)
    }

    public func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws {
        try await AccountStatements(self).insertToken(hash: hash, accountID: accountID, expiresMs: expiresMs)
    }

    public func deleteToken(hash: String) async throws { try await AccountStatements(self).deleteToken(hash: hash) }

    public func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        try await AccountStatements(self).changePassword(accountID: accountID, passwordHash: passwordHash, keepTokenHash: keepTokenHash)
    }

    public func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        try await AccountStatements(self).countLoginAttempt(keys: keys, nowMs: nowMs, windowMs: windowMs)
    }

    public func rememberLogin(key: String, nowMs: Int64) async throws { try await AccountStatements(self).rememberLogin(key: key, nowMs: nowMs) }

    public func lastLogin(key: String) async throws -> Int64? { try await AccountStatements(self).lastLogin(key: key) }

    public func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        try await AccountStatements(self).forgiveLoginAttempt(resetKey: resetKey, uncountKeys: uncountKeys)
    }

    public func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await AccountStatements(self).purgeExpired(nowMs: nowMs, throttleBeforeMs: throttleBeforeMs)
    }

    public func identityAccount(issuer: String, subject: String) async throws -> String? {
        try await AccountStatements(self).identityAccount(issuer: issuer, subject: subject)
    }

    public func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool) {
        try await AccountStatements(self).createIdentityAccount(account, issuer: issuer, subject: subject, space: space, nowMs: nowMs)
    }

    /// Tells this instance's hub that the sessions cached under `keys` (spaces, `@account`s) are stale: they go, and
    /// the spaces' streams wake and check their token again.
    func revoke(_ keys: [String]) {
        for key in keys { hub?.revokeTokens(family: key) }
    }
}

extension SQLiteStore {

    public func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws {
        try await SpaceStatements(self).createSpace(id: id, name: name, familyItem: familyItem, ownerID: ownerID, nowMs: nowMs, limits: limits)
    }

    public func renameSpace(id: String, name: String) async throws { try await SpaceStatements(self).renameSpace(id: id, name: name) }

    public func spaces(accountID: String) async throws -> [SpaceRecord] { try await SpaceStatements(self).spaces(accountID: accountID) }

    public func members(spaceID: String) async throws -> [MemberRecord] { try await SpaceStatements(self).members(spaceID: spaceID) }

    public func member(spaceID: String, accountID: String) async throws -> MemberRecord? {
        try await SpaceStatements(self).member(spaceID: spaceID, accountID: accountID)
    }

    public func setRole(spaceID: String, accountID: String, role: SpaceRole) async throws -> Bool {
        try await SpaceStatements(self).setRole(spaceID: spaceID, accountID: accountID, role: role)
    }

    public func removeMember(spaceID: String, accountID: String) async throws -> Bool {
        try await SpaceStatements(self).removeMember(spaceID: spaceID, accountID: accountID)
    }

    public func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws {
        try await SpaceStatements(self).insertInvitation(invitation, nowMs: nowMs, limits: limits)
    }

    public func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord? {
        try await SpaceStatements(self).acceptInvitation(hash: hash, accountID: accountID, nowMs: nowMs, limits: limits)
    }
}
