/// Spaces, memberships and invitations (protocol §15), written once for both backends. Every change of a membership
/// revokes the cached sessions it affects at its commit, on every instance.
package struct SpaceStatements: Sendable {
    package let executor: any SQLExecutor

    package init(_ executor: any SQLExecutor) { self.executor = executor }

    package func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws {
        try await executor.inSQLTransaction { c in
            try await c.lockAccount(ownerID)
            try await c.checkMembershipLimits(accountID: ownerID, limits: limits, owning: true)
            try await c.execute("INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))")
            if let familyItem { _ = try await c.items.store(familyItem, spaceID: id, version: nil, nowMs: nowMs) }
            try await c.insertMembership(spaceID: id, accountID: ownerID, role: .owner, sinceVersion: 0)
            try await c.revokeAtCommit([AccountSession.accountKey(ownerID)])
        }
    }

    package func renameSpace(id: String, name: String) async throws {
        try await executor.inSQLStatements(writes: true) { c in try await c.execute("UPDATE families SET name = \(name) WHERE id = \(id)") }
    }

    package func spaces(accountID: String) async throws -> [SpaceRecord] {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.rows(
                """
                SELECT f.id, f.name, m.role FROM memberships m JOIN families f ON f.id = m.space_id
                WHERE m.account_id = \(accountID) ORDER BY \(.insertionOrder("m"))
                """
            ).map { SpaceRecord(id: $0.text(0), name: $0.text(1), role: SpaceRole(stored: $0.text(2))) }
        }
    }

    package func members(spaceID: String) async throws -> [MemberRecord] {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.rows(
                """
                SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                WHERE m.space_id = \(spaceID) ORDER BY \(.insertionOrder("m"))
                """
            ).map { MemberRecord(accountID: $0.text(0), displayName: $0.text(1), role: SpaceRole(stored: $0.text(2))) }
        }
    }

    package func member(spaceID: String, accountID: String) async throws -> MemberRecord? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row(
                """
                SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                WHERE m.space_id = \(spaceID) AND m.account_id = \(accountID)
                """
            ).map { MemberRecord(accountID: $0.text(0), displayName: $0.text(1), role: SpaceRole(stored: $0.text(2))) }
        }
    }

    package func setRole(spaceID: String, accountID: String, role: SpaceRole, by callerID: String, limits: SpaceLimits) async throws -> Bool {
        try await executor.inSQLTransaction { c in
            // Raised to owner, the account's owned spaces are counted (security review L1): its row first, then the
            // space's (the order of every membership change), so a space it creates or an owner code it accepts
            // meanwhile is counted too.
            if role == .owner {
                guard try await c.row("SELECT 1 FROM accounts WHERE id = \(accountID)\(.forUpdate)") != nil else { return false }
            }
            guard let current = try await c.lockedRole(spaceID: spaceID, accountID: accountID) else { return false }
            // The caller's role again, under the space's lock: two owners demoting each other at once cannot both win.
            try await c.requireOwner(callerID, of: spaceID, to: "change a member's role")
            if current != .owner, role == .owner { try await c.checkOwnedLimit(accountID: accountID, limits: limits) }
            if current == .owner, role != .owner { try await c.checkNotLastOwner(spaceID: spaceID) }
            // What the account may read changes with its role (`access.read`, members-only children): every date it
            // holds was cut for the old role, so it starts from a new version of the space, as a new member does, and
            // its next sync is a full answer (a reader made member had never received the members-only rows it now
            // reads; a member made reader keeps rows it may no longer read).
            let since = current == role ? nil : try await c.items.bump(spaceID: spaceID)
            if let since {
                try await c.execute(
                    """
                    UPDATE memberships SET role = \(role.rawValue), since_version = \(since)
                    WHERE space_id = \(spaceID) AND account_id = \(accountID)
                    """)
            }
            if current == .owner, role != .owner { try await c.deleteInvitations(mintedBy: accountID, in: spaceID) }
            try await c.revokeAtCommit([spaceID])
            return true
        }
    }

    package func removeMember(spaceID: String, accountID: String, by callerID: String, privateLists: [String]) async throws -> Bool {
        try await executor.inSQLTransaction { c in
            guard let current = try await c.lockedRole(spaceID: spaceID, accountID: accountID) else { return false }
            let removed = callerID != accountID
            // The caller's role again, under the space's lock: two owners removing each other at once cannot both win.
            if removed { try await c.requireOwner(callerID, of: spaceID, to: "remove another member") }
            if current == .owner { try await c.checkNotLastOwner(spaceID: spaceID) }
            try await c.execute("DELETE FROM memberships WHERE space_id = \(spaceID) AND account_id = \(accountID)")
            // Its private items of the space go with it, and their share of the space's quotas (security review M1).
            try await c.deletePrivateItems(of: accountID, lists: privateLists, in: spaceID)
            try await c.deleteInvitations(mintedBy: accountID, in: spaceID)
            if removed {
                // No code of the space that exists now admits it again; one minted after this does (security review H1).
                try await c.execute(
                    """
                    INSERT INTO invitation_refusals (hash, account_id)
                    SELECT hash, \(accountID) FROM invitations WHERE space_id = \(spaceID)
                    ON CONFLICT DO NOTHING
                    """)
            }
            try await c.revokeAtCommit([spaceID, AccountSession.accountKey(accountID)])
            return true
        }
    }

    package func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws {
        try await executor.inSQLTransaction { c in
            // Counted under the space's lock: concurrent invitations cannot pass the limit together.
            try await c.execute("SELECT 1 FROM families WHERE id = \(invitation.spaceID)\(.forUpdate)")
            let live = try await c.count(
                "SELECT count(*) FROM invitations WHERE space_id = \(invitation.spaceID) AND expires_ms > \(nowMs) AND uses_left > 0")
            try SpaceLimits.checkInvitations(live: live, limits: limits)
            // No minter (a store-level caller) is stored as NULL, as for the codes minted before the column existed.
            try await c.execute(
                """
                INSERT INTO invitations (hash, space_id, role, uses_left, expires_ms, created_ms, created_by)
                VALUES (\(invitation.hash), \(invitation.spaceID), \(invitation.role.rawValue), \(invitation.uses), \(invitation.expiresMs),
                        \(nowMs), NULLIF(\(invitation.createdBy ?? ""), ''))
                """)
        }
    }

    package func invitations(spaceID: String, nowMs: Int64) async throws -> [InvitationRecord] {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.rows(
                """
                SELECT hash, role, uses_left, expires_ms, created_ms, created_by FROM invitations
                WHERE space_id = \(spaceID) AND expires_ms > \(nowMs) AND uses_left > 0
                ORDER BY COALESCE(created_ms, 0), hash
                """
            ).map { row in
                InvitationRecord(
                    hash: row.text(0), role: SpaceRole(stored: row.text(1)), usesLeft: Int(row.int(2)), expiresMs: row.int(3),
                    createdMs: row.isNull(4) ? nil : row.int(4), createdBy: row.isNull(5) ? nil : row.text(5))
            }
        }
    }

    package func revokeInvitation(spaceID: String, id: String) async throws -> Bool {
        // `InvitationRecord.idLength` hex digits of the hash (a literal: a bound length would be a bigint PostgreSQL's
        // substr does not take).
        try await executor.inSQLStatements(writes: true) { c in
            try await c.row("DELETE FROM invitations WHERE space_id = \(spaceID) AND substr(hash, 1, 16) = \(id) RETURNING 1") != nil
        }
    }

    package func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord? {
        try await executor.inSQLTransaction { c -> SpaceRecord? in
            // The account first, then the space: the order of every membership change.
            try await c.lockAccount(accountID)
            guard
                let invitation = try await c.row(
                    """
                    SELECT i.space_id, i.role, f.name FROM invitations i JOIN families f ON f.id = i.space_id
                    WHERE i.hash = \(hash) AND i.expires_ms > \(nowMs) AND i.uses_left > 0\(.forUpdateOf("i, f"))
                    """)
            else { return nil }
            let (spaceID, name) = (invitation.text(0), invitation.text(2))
            if let current = try await c.lockedRole(spaceID: spaceID, accountID: accountID) {
                return SpaceRecord(id: spaceID, name: name, role: current)
            }
            guard try await c.row("SELECT 1 FROM invitation_refusals WHERE hash = \(hash) AND account_id = \(accountID)") == nil else {
                throw SyncError.forbidden(
                    "This account was removed from the space after the code was made: an owner invites it again with a new code.")
            }
            let role = SpaceRole(stored: invitation.text(1))
            // An owner code makes it an owner: counted against the spaces it may own (security review L1).
            try await c.checkMembershipLimits(accountID: accountID, limits: limits, owning: role == .owner)
            try SpaceLimits.checkMembers(try await c.count("SELECT count(*) FROM memberships WHERE space_id = \(spaceID)"), limits: limits)
            // Joining raises the space's counter: a date issued before it is no date for this member.
            let version = try await c.items.bump(spaceID: spaceID)
            try await c.insertMembership(spaceID: spaceID, accountID: accountID, role: role, sinceVersion: version)
            try await c.execute("UPDATE invitations SET uses_left = uses_left - 1 WHERE hash = \(hash)")
            try await c.revokeAtCommit([spaceID, AccountSession.accountKey(accountID)])
            return SpaceRecord(id: spaceID, name: name, role: role)
        }
    }
}
