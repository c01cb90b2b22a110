/// The statements that accounts and spaces both build on: an account's insert, memberships, locks and owner checks.
///
/// Lock order, on PostgreSQL: an account's row, then a space's row (as every write of the space takes it). A change of
/// a space's members holds the space's row, and a change of an account's memberships its account's row, so concurrent
/// changes count and check owners one after the other. SQLite's single writer orders them whole.
extension SQLConnection {
    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    package func insertAccount(_ account: NewAccount, spaceID: String, nowMs: Int64) async throws -> Int64 {
        do {
            // After every account of the family whatever this instance's clock says: the owner is the family's oldest
            // account, and a clock behind another instance's must not make a new member older.
            try await execute(
                """
                INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                VALUES (\(account.id), \(spaceID), \(account.username), \(account.username.lowercased()), \(account.displayName),
                        \(account.passwordHash),
                        \(.greatest)(\(nowMs), (SELECT coalesce(max(created_ms) + 1, 0) FROM accounts WHERE family_id = \(spaceID))))
                """)
        } catch SQLConstraintViolation.unique {
            throw SyncError.usernameTaken
        }
        let version = try await items.bump(spaceID: spaceID)
        for row in account.rows { _ = try await items.store(row, spaceID: spaceID, version: version, nowMs: nowMs) }
        return version
    }

    package func insertMembership(spaceID: String, accountID: String, role: SpaceRole, sinceVersion: Int64) async throws {
        try await execute(
            """
            INSERT INTO memberships (space_id, account_id, role, since_version)
            VALUES (\(spaceID), \(accountID), \(role.rawValue), \(sinceVersion))
            """)
    }

    /// Locks the account's row; 401 when the account is gone.
    package func lockAccount(_ accountID: String) async throws {
        guard try await row("SELECT 1 FROM accounts WHERE id = \(accountID)\(.forUpdate)") != nil else { throw SyncError.unauthorized }
    }

    /// The account's role in the space, with the space's row locked (as every write does).
    package func lockedRole(spaceID: String, accountID: String) async throws -> SpaceRole? {
        try await execute("SELECT 1 FROM families WHERE id = \(spaceID)\(.forUpdate)")
        return try await row("SELECT role FROM memberships WHERE space_id = \(spaceID) AND account_id = \(accountID)")
            .map { SpaceRole(stored: $0.text(0)) }
    }

    /// The spaces an account belongs to.
    package func spaceIDs(accountID: String) async throws -> [String] {
        try await rows("SELECT space_id FROM memberships WHERE account_id = \(accountID)").map { $0.text(0) }
    }

    /// 409 `last_owner` unless the space has another owner.
    package func checkNotLastOwner(spaceID: String) async throws {
        guard try await count("SELECT count(*) FROM memberships WHERE space_id = \(spaceID) AND role = 'owner'") > 1 else {
            throw SyncError.lastOwner
        }
    }

    /// 409 `last_owner` when the account is the only owner of a space that has other members.
    package func checkNotLastOwnerAnywhere(accountID: String) async throws {
        let stranded = try await count(
            """
            SELECT count(*) FROM memberships m
            WHERE m.account_id = \(accountID) AND m.role = 'owner'
              AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.role = 'owner' AND o.account_id <> m.account_id)
              AND EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.account_id <> m.account_id)
            """)
        guard stranded == 0 else { throw SyncError.lastOwner }
    }

    /// 404 when `callerID` no longer belongs to the space, 403 `forbidden` unless it owns it: an owner's authority read
    /// again in the transaction that uses it, after the space's row is locked (security review L2). The caller's
    /// cached session only says it was an owner when its request began; two owners acting on each other at once would
    /// otherwise both succeed, the second on a role it no longer held.
    package func requireOwner(_ callerID: String, of spaceID: String, to action: String) async throws {
        guard let caller = try await row("SELECT role FROM memberships WHERE space_id = \(spaceID) AND account_id = \(callerID)") else {
            throw SyncError.notFound("No such space.")
        }
        let role = SpaceRole(stored: caller.text(0))
        guard role == .owner else { throw SyncError.forbidden("A \(role.rawValue) of this space may not \(action).") }
    }

    /// 403 `quota_exceeded` when the account owns `limits.owned` spaces already: run before it is raised to owner of a
    /// space it belongs to, with its row locked (security review L1). Its memberships are not counted: it keeps them.
    package func checkOwnedLimit(accountID: String, limits: SpaceLimits) async throws {
        try SpaceLimits.checkOwned(
            try await count("SELECT count(*) FROM memberships WHERE account_id = \(accountID) AND role = 'owner'"), limits: limits)
    }

    /// Deletes an account's items of the lists private to each account (`privateLists`, their model names): in `spaceID`
    /// when it leaves the space or is removed from it, in every space (nil) when it is deleted (security review M1).
    /// Outright, tombstones too: no other account ever read them, and the account's own replica of the space starts from
    /// a full sync if it comes back (`since_version`). The usage triggers give the space's quotas (`live_items`,
    /// `stored_bytes`) back in this transaction.
    package func deletePrivateItems(of accountID: String, lists privateLists: [String], in spaceID: String?) async throws {
        guard !privateLists.isEmpty else { return }
        let keys = privateLists.map { "\($0)~\(accountID)" }
        if let spaceID {
            try await execute("DELETE FROM items WHERE family_id = \(spaceID) AND collection\(isAnyOf: keys)")
        } else {
            // Every space, also those it left before its private rows went with it: through the index of private rows
            // (`items_private`, whose condition the statement repeats word for word so that both planners take it), not a
            // scan of every space's items.
            try await execute("DELETE FROM items WHERE collection\(isAnyOf: keys) AND collection LIKE '%~%'")
        }
    }

    /// Deletes the invitations `accountID` minted in `spaceID`, in the transaction where it leaves the space, is removed
    /// from it or stops being an owner there: no code of its making outlives its right to invite (security review H1).
    package func deleteInvitations(mintedBy accountID: String, in spaceID: String) async throws {
        try await execute("DELETE FROM invitations WHERE space_id = \(spaceID) AND created_by = \(accountID)")
    }

    /// 403 `quota_exceeded` when the account belongs to `limits.memberships` spaces, or (`owning`) owns `limits.owned`.
    package func checkMembershipLimits(accountID: String, limits: SpaceLimits, owning: Bool) async throws {
        let row = try await row(
            "SELECT count(*), count(*) FILTER (WHERE role = 'owner') FROM memberships WHERE account_id = \(accountID)")
        try SpaceLimits.check(
            memberships: Int(row?.int(0) ?? 0), owned: owning ? Int(row?.int(1) ?? 0) : nil, limits: limits)
    }

    /// Marks the spaces `accountID` is the last member of (and the space it was made in, when nobody else belongs to it:
    /// an identity account's that it never joined) as emptied now and drops their invitations; run in the transaction
    /// that deletes the account's memberships, before it does.
    package func markEmptied(leaving accountID: String, nowMs: Int64) async throws {
        let emptied = try await rows(
            """
            SELECT f.id FROM families f
            WHERE (f.id IN (SELECT m.space_id FROM memberships m WHERE m.account_id = \(accountID))
                   OR f.id = (SELECT a.family_id FROM accounts a WHERE a.id = \(accountID)))
              AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = f.id AND o.account_id <> \(accountID))
              AND f.emptied_ms IS NULL
            """
        ).map { $0.text(0) }
        guard !emptied.isEmpty else { return }
        try await execute("UPDATE families SET emptied_ms = \(nowMs) WHERE id\(isAnyOf: emptied)")
        try await execute("DELETE FROM invitations WHERE space_id\(isAnyOf: emptied)")
    }
}
