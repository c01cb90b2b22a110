/// Families, accounts, tokens, identities and login throttling, written once for both backends: each store's
/// `AccountStore` methods call these on itself (the session lookup aside, which each backend keeps as its hottest
/// read).
package struct AccountStatements: Sendable {
    package let executor: any SQLExecutor

    package init(_ executor: any SQLExecutor) { self.executor = executor }

    package func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await executor.inSQLTransaction { c in
            try await c.execute("INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))")
            let version = try await c.insertAccount(account, spaceID: id, nowMs: nowMs)
            if let familyItem { _ = try await c.items.store(familyItem, spaceID: id, version: version, nowMs: nowMs) }
            try await c.insertMembership(spaceID: id, accountID: account.id, role: .owner, sinceVersion: 0)
        }
    }

    package func createAccount(_ account: NewAccount, spaceID: String, nowMs: Int64, maxMembers: Int, addedBy: String?) async throws {
        try await executor.inSQLTransaction { c in
            guard try await c.items.family(spaceID, lock: true) != nil else { throw SyncError.unauthorized }
            // Under the space's lock (security review M4): the caller still owns the space, and the space's members
            // are counted as an accepted invitation counts them, by membership (accounts made in the space that left
            // it are no members; members who joined by invitation are).
            if let addedBy { try await c.requireOwner(addedBy, of: spaceID, to: "add an account") }
            try SpaceLimits.checkMembers(
                try await c.count("SELECT count(*) FROM memberships WHERE space_id = \(spaceID)"), limits: SpaceLimits(members: maxMembers))
            let version = try await c.insertAccount(account, spaceID: spaceID, nowMs: nowMs)
            try await c.insertMembership(spaceID: spaceID, accountID: account.id, role: .member, sinceVersion: version)
        }
    }

    package func accounts(spaceID: String) async throws -> [AccountRecord] {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.rows(
                """
                SELECT a.id, a.username, a.display_name, m.role = 'owner' FROM accounts a
                JOIN memberships m ON m.account_id = a.id AND m.space_id = a.family_id
                WHERE a.family_id = \(spaceID) ORDER BY a.created_ms, \(.insertionOrder("a"))
                """
            ).map { AccountRecord(id: $0.text(0), username: $0.text(1), displayName: $0.text(2), owner: $0.bool(3)) }
        }
    }

    package func deleteAccount(
        accountID: String, spaceID: String, deletedBy: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        try await executor.inSQLTransaction { c in
            guard try await c.items.family(spaceID, lock: true) != nil else { throw SyncError.unauthorized }
            // The account's row is locked first: a login's new token (its foreign key check) then waits for this
            // transaction and fails after it, instead of committing a token that the account's delete would then trip
            // over.
            guard try await c.row("SELECT 1 FROM accounts WHERE id = \(accountID) AND family_id = \(spaceID)\(.forUpdate)") != nil
            else { return false }
            if deletedBy != accountID {
                guard try await c.mayDelete(accountID, by: deletedBy, in: spaceID) else { return false }
            }
            try await c.checkNotLastOwnerAnywhere(accountID: accountID)
            // The cached tokens of its spaces go, and their streams wake and check theirs again.
            try await c.revokeAtCommit(try await c.spaceIDs(accountID: accountID) + [spaceID, AccountSession.accountKey(accountID)])
            // Its tokens, identities and memberships first: they reference the account.
            try await c.execute("DELETE FROM tokens WHERE account_id = \(accountID)")
            try await c.execute("DELETE FROM identities WHERE account_id = \(accountID)")
            // Its private items of every space, also of spaces it left before they went with it (security review M1).
            try await c.deletePrivateItems(of: accountID, lists: privateLists, in: nil)
            try await c.markEmptied(leaving: accountID, nowMs: nowMs)
            // It leaves every space: its codes go too, and what barred it from others' codes.
            try await c.execute("DELETE FROM invitations WHERE created_by = \(accountID)")
            try await c.execute("DELETE FROM invitation_refusals WHERE account_id = \(accountID)")
            try await c.execute("DELETE FROM memberships WHERE account_id = \(accountID)")
            guard try await c.row("DELETE FROM accounts WHERE id = \(accountID) AND family_id = \(spaceID) RETURNING id") != nil else {
                return false
            }
            let version = try await c.items.bump(spaceID: spaceID)
            for key in AccountRecord.itemKeys(accountID, itemCollections) {
                _ = try await c.items.store(RowWrite(key: key, body: nil), spaceID: spaceID, version: version, nowMs: nowMs)
            }
            return true
        }
    }

    package func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row("SELECT id, family_id, password_hash FROM accounts WHERE username_key = \(usernameKey)").map {
                AccountCredentials(accountID: $0.text(0), spaceID: $0.text(1), passwordHash: $0.text(2))
            }
        }
    }

    package func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row("SELECT username, family_id, password_hash FROM accounts WHERE id = \(accountID)").map {
                ($0.text(0), AccountCredentials(accountID: accountID, spaceID: $0.text(1), passwordHash: $0.text(2)))
            }
        }
    }

    package func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws {
        try await executor.inSQLStatements(writes: true) { c in
            do {
                let inserted = try await c.row(
                    """
                    INSERT INTO tokens (hash, account_id, family_id, expires_ms)
                    SELECT \(hash), id, family_id, \(expiresMs) FROM accounts WHERE id = \(accountID) RETURNING 1
                    """)
                guard inserted != nil else { throw SyncError.invalidCredentials }
            } catch SQLConstraintViolation.foreignKey {
                // The account was deleted after its password was checked (a login racing `DELETE /accounts`): no
                // account, so no token.
                throw SyncError.invalidCredentials
            }
        }
    }

    package func deleteToken(hash: String) async throws {
        try await executor.inSQLTransaction { c in
            guard let account = try await c.row("DELETE FROM tokens WHERE hash = \(hash) RETURNING account_id")?.text(0) else { return }
            // Its streams, on every instance, check their token again at once.
            try await c.revokeAtCommit(try await c.spaceIDs(accountID: account) + [AccountSession.accountKey(account)])
        }
    }

    package func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        try await executor.inSQLTransaction { c in
            try await c.execute("UPDATE accounts SET password_hash = \(passwordHash) WHERE id = \(accountID)")
            try await c.execute("DELETE FROM tokens WHERE account_id = \(accountID) AND hash <> \(keepTokenHash)")
            try await c.revokeAtCommit(try await c.spaceIDs(accountID: accountID) + [AccountSession.accountKey(accountID)])
        }
    }

    package func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        let windowOpen = nowMs - windowMs
        return try await executor.inSQLTransaction { c in
            var out: [String: ThrottleWindow] = [:]
            // Keys in one order for every caller, so concurrent upserts lock rows in the same order.
            for key in keys.sorted() {
                let row = try await c.row(
                    """
                    INSERT INTO login_throttle (key, attempts, window_start_ms) VALUES (\(key), 1, \(nowMs))
                    ON CONFLICT (key) DO UPDATE SET
                      attempts = CASE WHEN login_throttle.window_start_ms <= \(windowOpen)
                                   THEN 1 + \(.greatest)(0, login_throttle.attempts
                                     * (2 * \(windowMs) - (\(nowMs) - login_throttle.window_start_ms)) / \(windowMs))
                                   ELSE login_throttle.attempts + 1 END,
                      window_start_ms = CASE WHEN login_throttle.window_start_ms <= \(windowOpen) THEN \(nowMs)
                                        ELSE login_throttle.window_start_ms END
                    RETURNING attempts, window_start_ms
                    """)
                if let row { out[key] = ThrottleWindow(attempts: Int(row.int(0)), startMs: row.int(1)) }
            }
            return out
        }
    }

    package func rememberLogin(key: String, nowMs: Int64) async throws {
        try await executor.inSQLStatements(writes: true) { c in
            try await c.execute(
                """
                INSERT INTO login_throttle (key, attempts, window_start_ms) VALUES (\(key), 0, \(nowMs))
                ON CONFLICT (key) DO UPDATE SET window_start_ms = \(nowMs)
                """)
        }
    }

    package func lastLogin(key: String) async throws -> Int64? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row("SELECT window_start_ms FROM login_throttle WHERE key = \(key)")?.int(0)
        }
    }

    package func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        let reset = resetKey ?? ""  // no key is empty
        try await executor.inSQLTransaction { c in
            // One key at a time, in the order `countLoginAttempt` locks them: a multi-row update locks its rows in the
            // table's order and deadlocked with concurrent counts on PostgreSQL.
            for key in Set([resetKey].compactMap { $0 } + uncountKeys).sorted() {
                try await c.execute(
                    """
                    UPDATE login_throttle SET attempts = CASE WHEN key = \(reset) THEN 0 ELSE \(.greatest)(attempts - 1, 0) END
                    WHERE key = \(key)
                    """)
            }
        }
    }

    package func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await executor.inSQLTransaction { c in
            let tokens = try await c.rows("DELETE FROM tokens WHERE expires_ms <= \(nowMs) RETURNING 1").count
            let invitations = try await c.rows("DELETE FROM invitations WHERE expires_ms <= \(nowMs) OR uses_left <= 0 RETURNING 1").count
            let throttles = try await c.rows(
                """
                DELETE FROM login_throttle
                WHERE window_start_ms < CASE WHEN key LIKE 'k:%' THEN \(nowMs - LoginThrottleKeys.knownForMs) ELSE \(throttleBeforeMs) END
                RETURNING 1
                """
            ).count
            return tokens + invitations + throttles
        }
    }

    package func identityAccount(issuer: String, subject: String) async throws -> String? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row("SELECT account_id FROM identities WHERE issuer = \(issuer) AND subject = \(subject)")?.text(0)
        }
    }

    /// Two first exchanges of one identity at once make one account: the second's insert of the identity finds the
    /// first's row (on PostgreSQL, after waiting for its commit), and its whole transaction is undone.
    package func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool) {
        do {
            try await executor.inSQLTransaction { c in
                try await c.execute(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(space.id), \(space.name), 0, \(nowMs))")
                let version = try await c.insertAccount(account, spaceID: space.id, nowMs: nowMs)
                if space.member {
                    if let item = space.familyItem { _ = try await c.items.store(item, spaceID: space.id, version: version, nowMs: nowMs) }
                    try await c.insertMembership(spaceID: space.id, accountID: account.id, role: .owner, sinceVersion: 0)
                }
                let inserted = try await c.row(
                    """
                    INSERT INTO identities (issuer, subject, account_id, created_ms) VALUES (\(issuer), \(subject), \(account.id), \(nowMs))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """)
                guard inserted != nil else { throw IdentityTaken() }
            }
            return (account.id, true)
        } catch is IdentityTaken {
            guard let existing = try await identityAccount(issuer: issuer, subject: subject) else { throw SyncError.invalidCredentials }
            return (existing, false)
        }
    }
}

extension SQLConnection {
    /// Whether `deleter` may delete `accountID` for good, checked under the family's lock (security review H2, L2):
    /// `deleter` must still own the family, and the account must be a member of the family alone, not an owner of it
    /// (a login made in the family, a kid's). Anyone else only the account itself deletes: its deletion reaches its
    /// other spaces and its private items everywhere. False when the account is no longer a member of the family.
    fileprivate func mayDelete(_ accountID: String, by deleter: String, in spaceID: String) async throws -> Bool {
        let deleterRole = try await row("SELECT role FROM memberships WHERE space_id = \(spaceID) AND account_id = \(deleter)")
        guard deleterRole.map({ SpaceRole(stored: $0.text(0)) }) == .owner else {
            throw SyncError.forbidden("Only the family's owner deletes another account.")
        }
        let memberships = try await rows("SELECT space_id, role FROM memberships WHERE account_id = \(accountID)")
        guard let own = memberships.first(where: { $0.text(0) == spaceID }) else { return false }
        guard memberships.count == 1, SpaceRole(stored: own.text(1)) != .owner else {
            throw SyncError.forbidden(
                "Only the account itself may delete an owner or an account of other spaces; remove it from this space instead.")
        }
        return true
    }
}

/// Another exchange made the identity's account first (its transaction is undone).
struct IdentityTaken: Error {}
