import Foundation
import Logging
import PostgresNIO
import SyncCore

/// Spaces, memberships and invitations in PostgreSQL. A change of a space's members holds the space's row lock (as a
/// write does), and a change of an account's memberships its account row's lock, so concurrent changes count and check
/// owners one after the other; every change notifies the revocation of the cached sessions it affects, in its
/// transaction, so every instance hears it at the commit.
extension PostgresStore {

    public func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws {
        try await guarded {
            try await transaction { conn in
                try await lockAccount(ownerID, on: conn)
                try await checkMembershipLimits(accountID: ownerID, limits: limits, owning: true, on: conn)
                try await conn.query(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))", logger: logger)
                if let familyItem {
                    _ = try await PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements).store(
                        familyItem, familyID: id, version: nil, nowMs: nowMs)
                }
                try await insertMembership(spaceID: id, accountID: ownerID, role: .owner, sinceVersion: 0, on: conn)
                try await notify(keys: [AccountSession.accountKey(ownerID)], on: conn)
            }
        }
    }

    public func renameSpace(id: String, name: String) async throws {
        try await guarded { try await client.query("UPDATE families SET name = \(name) WHERE id = \(id)", logger: logger) }
    }

    public func spaces(accountID: String) async throws -> [SpaceRecord] {
        try await guarded {
            var out: [SpaceRecord] = []
            for try await (id, name, role) in try await client.query(
                """
                SELECT f.id, f.name, m.role FROM memberships m JOIN families f ON f.id = m.space_id
                WHERE m.account_id = \(accountID) ORDER BY m.seq
                """, logger: logger
            ).decode((String, String, String).self) {
                out.append(SpaceRecord(id: id, name: name, role: SpaceRole(stored: role)))
            }
            return out
        }
    }

    public func members(spaceID: String) async throws -> [MemberRecord] {
        try await guarded {
            var out: [MemberRecord] = []
            for try await (id, name, role) in try await client.query(
                """
                SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                WHERE m.space_id = \(spaceID) ORDER BY m.seq
                """, logger: logger
            ).decode((String, String, String).self) {
                out.append(MemberRecord(accountID: id, displayName: name, role: SpaceRole(stored: role)))
            }
            return out
        }
    }

    public func member(spaceID: String, accountID: String) async throws -> MemberRecord? {
        try await guarded {
            for try await (id, name, role) in try await client.query(
                """
                SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                WHERE m.space_id = \(spaceID) AND m.account_id = \(accountID)
                """, logger: logger
            ).decode((String, String, String).self) {
                return MemberRecord(accountID: id, displayName: name, role: SpaceRole(stored: role))
            }
            return nil
        }
    }

    public func setRole(spaceID: String, accountID: String, role: SpaceRole) async throws -> Bool {
        try await guarded {
            try await transaction { conn in
                guard let current = try await lockedRole(spaceID: spaceID, accountID: accountID, on: conn) else { return false }
                if current == .owner, role != .owner { try await checkNotLastOwner(spaceID: spaceID, on: conn) }
                try await conn.query(
                    "UPDATE memberships SET role = \(role.rawValue) WHERE space_id = \(spaceID) AND account_id = \(accountID)",
                    logger: logger)
                try await notify(keys: [spaceID], on: conn)
                return true
            }
        }
    }

    public func removeMember(spaceID: String, accountID: String) async throws -> Bool {
        try await guarded {
            try await transaction { conn in
                guard let current = try await lockedRole(spaceID: spaceID, accountID: accountID, on: conn) else { return false }
                if current == .owner { try await checkNotLastOwner(spaceID: spaceID, on: conn) }
                try await conn.query(
                    "DELETE FROM memberships WHERE space_id = \(spaceID) AND account_id = \(accountID)", logger: logger)
                try await notify(keys: [spaceID, AccountSession.accountKey(accountID)], on: conn)
                return true
            }
        }
    }

    public func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws {
        try await guarded {
            try await transaction { conn in
                // Counted under the space's lock: concurrent invitations cannot pass the limit together.
                try await conn.query("SELECT 1 FROM families WHERE id = \(invitation.spaceID) FOR UPDATE", logger: logger)
                for try await live in try await conn.query(
                    """
                    SELECT count(*) FROM invitations WHERE space_id = \(invitation.spaceID) AND expires_ms > \(nowMs) AND uses_left > 0
                    """, logger: logger
                ).decode(Int64.self) {
                    try SpaceLimits.checkInvitations(live: Int(live), limits: limits)
                }
                try await conn.query(
                    """
                    INSERT INTO invitations (hash, space_id, role, uses_left, expires_ms)
                    VALUES (\(invitation.hash), \(invitation.spaceID), \(invitation.role.rawValue), \(Int32(invitation.uses)),
                            \(invitation.expiresMs))
                    """, logger: logger)
            }
        }
    }

    public func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord? {
        try await guarded {
            try await transaction { conn -> SpaceRecord? in
                // The account first, then the space: the order of every membership change.
                try await lockAccount(accountID, on: conn)
                var invitation: (space: String, role: String, name: String)?
                for try await row in try await conn.query(
                    """
                    SELECT i.space_id, i.role, f.name FROM invitations i JOIN families f ON f.id = i.space_id
                    WHERE i.hash = \(hash) AND i.expires_ms > \(nowMs) AND i.uses_left > 0 FOR UPDATE OF i, f
                    """, logger: logger
                ).decode((String, String, String).self) {
                    invitation = row
                }
                guard let invitation else { return nil }
                if let current = try await lockedRole(spaceID: invitation.space, accountID: accountID, on: conn) {
                    return SpaceRecord(id: invitation.space, name: invitation.name, role: current)
                }
                try await checkMembershipLimits(accountID: accountID, limits: limits, owning: false, on: conn)
                for try await members in try await conn.query(
                    "SELECT count(*) FROM memberships WHERE space_id = \(invitation.space)", logger: logger
                ).decode(Int64.self) {
                    try SpaceLimits.checkMembers(Int(members), limits: limits)
                }
                let role = SpaceRole(stored: invitation.role)
                var version: Int64 = 0
                for try await bumped in try await conn.query(
                    """
                    WITH b AS (
                      UPDATE families SET version = version + 1 WHERE id = \(invitation.space)
                      RETURNING version, pg_notify(\(PostgresChangeListener.channel), id || ':' || version)
                    )
                    SELECT version FROM b
                    """, logger: logger
                ).decode(Int64.self) {
                    version = bumped
                }
                try await insertMembership(spaceID: invitation.space, accountID: accountID, role: role, sinceVersion: version, on: conn)
                try await conn.query("UPDATE invitations SET uses_left = uses_left - 1 WHERE hash = \(hash)", logger: logger)
                try await notify(keys: [invitation.space, AccountSession.accountKey(accountID)], on: conn)
                return SpaceRecord(id: invitation.space, name: invitation.name, role: role)
            }
        }
    }

    func insertMembership(spaceID: String, accountID: String, role: SpaceRole, sinceVersion: Int64, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO memberships (space_id, account_id, role, since_version)
            VALUES (\(spaceID), \(accountID), \(role.rawValue), \(sinceVersion))
            """, logger: logger)
    }

    /// Locks the account's row (the order: account, then space); 401 when the account is gone.
    func lockAccount(_ accountID: String, on conn: PostgresConnection) async throws {
        for try await _ in try await conn.query("SELECT 1 FROM accounts WHERE id = \(accountID) FOR UPDATE", logger: logger) {
            return
        }
        throw SyncError.unauthorized
    }

    /// The account's role in the space, with the space's row locked (as every write does) so that the owner checks of
    /// concurrent changes run one after the other.
    func lockedRole(spaceID: String, accountID: String, on conn: PostgresConnection) async throws -> SpaceRole? {
        try await conn.query("SELECT 1 FROM families WHERE id = \(spaceID) FOR UPDATE", logger: logger)
        for try await role in try await conn.query(
            "SELECT role FROM memberships WHERE space_id = \(spaceID) AND account_id = \(accountID)", logger: logger
        ).decode(String.self) {
            return SpaceRole(stored: role)
        }
        return nil
    }

    /// 409 `last_owner` unless the space has another owner.
    func checkNotLastOwner(spaceID: String, on conn: PostgresConnection) async throws {
        for try await owners in try await conn.query(
            "SELECT count(*) FROM memberships WHERE space_id = \(spaceID) AND role = 'owner'", logger: logger
        ).decode(Int64.self) where owners <= 1 {
            throw SyncError.lastOwner
        }
    }

    /// 409 `last_owner` when the account is the only owner of a space that has other members.
    func checkNotLastOwnerAnywhere(accountID: String, on conn: PostgresConnection) async throws {
        for try await stranded in try await conn.query(
            """
            SELECT count(*) FROM memberships m
            WHERE m.account_id = \(accountID) AND m.role = 'owner'
              AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.role = 'owner' AND o.account_id <> m.account_id)
              AND EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.account_id <> m.account_id)
            """, logger: logger
        ).decode(Int64.self) where stranded > 0 {
            throw SyncError.lastOwner
        }
    }

    /// 403 `quota_exceeded` when the account belongs to `limits.memberships` spaces, or (`owning`) owns `limits.owned`.
    func checkMembershipLimits(accountID: String, limits: SpaceLimits, owning: Bool, on conn: PostgresConnection) async throws {
        for try await (all, owned) in try await conn.query(
            "SELECT count(*), count(*) FILTER (WHERE role = 'owner') FROM memberships WHERE account_id = \(accountID)", logger: logger
        ).decode((Int64, Int64).self) {
            try SpaceLimits.check(memberships: Int(all), owned: owning ? Int(owned) : nil, limits: limits)
        }
    }

    /// Revokes the cached sessions under `keys` (spaces, `@account`s) on every instance, at the commit.
    func notify(keys: [String], on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            SELECT pg_notify(\(PostgresChangeListener.channel), \(PostgresChangeListener.revocationPrefix) || k)
            FROM unnest(\(keys)::text[]) AS k
            """, logger: logger)
    }

    /// Revokes the cached sessions of an account on every instance, at the commit: those of each of its spaces (whose
    /// streams wake and check their token again), of `also`, and its own.
    func notifyRevocation(accountID: String, also: [String], on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            SELECT pg_notify(\(PostgresChangeListener.channel), \(PostgresChangeListener.revocationPrefix) || k)
            FROM (SELECT space_id AS k FROM memberships WHERE account_id = \(accountID)
                  UNION SELECT unnest(\(also + [AccountSession.accountKey(accountID)])::text[])) keys
            """, logger: logger)
    }
}
