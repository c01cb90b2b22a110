import Foundation
import Logging
import PostgresNIO
import SyncCore

/// Accounts, tokens, identities, login throttling, spaces and memberships in PostgreSQL: the statements shared with
/// SQLite (`AccountStatements`, `SpaceStatements`), and the session lookup, a prepared statement (every request whose
/// token is not cached runs it).
extension PostgresStore {
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
}

extension PostgresStore {

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
