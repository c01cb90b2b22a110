import Foundation
import GRDB
import SyncCore

/// Spaces, memberships and invitations in SQLite. The single writer orders every membership change, so the counts
/// and owner checks below read what no other writer can change before the commit.
extension SQLiteStore {

    public func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws {
        try await write { db in
            try Self.checkMembershipLimits(accountID: ownerID, limits: limits, owning: true, db: db)
            try db.executeCached(
                sql: "INSERT INTO families (id, name, version, created_ms) VALUES (?, ?, 0, ?)", arguments: [id, name, nowMs])
            if let familyItem {
                let statements = SQLiteItemStatements(db: db)
                try statements.store(familyItem, familyID: id, version: try statements.bump(familyID: id), nowMs: nowMs)
            }
            try Self.insertMembership(spaceID: id, accountID: ownerID, role: .owner, sinceVersion: 0, db: db)
        }
        revoke([AccountSession.accountKey(ownerID)])
    }

    public func renameSpace(id: String, name: String) async throws {
        try await write { db in try db.executeCached(sql: "UPDATE families SET name = ? WHERE id = ?", arguments: [name, id]) }
    }

    public func spaces(accountID: String) async throws -> [SpaceRecord] {
        try await read { db in
            try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT f.id, f.name, m.role FROM memberships m JOIN families f ON f.id = m.space_id
                    WHERE m.account_id = ? ORDER BY m.rowid
                    """, arguments: [accountID]
            ).map { SpaceRecord(id: $0[0], name: $0[1], role: SpaceRole(stored: $0[2])) }
        }
    }

    public func members(spaceID: String) async throws -> [MemberRecord] {
        try await read { db in
            try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                    WHERE m.space_id = ? ORDER BY m.rowid
                    """, arguments: [spaceID]
            ).map { MemberRecord(accountID: $0[0], displayName: $0[1], role: SpaceRole(stored: $0[2])) }
        }
    }

    public func member(spaceID: String, accountID: String) async throws -> MemberRecord? {
        try await read { db in
            try Row.fetchOne(
                cached: db,
                sql: """
                    SELECT m.account_id, a.display_name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
                    WHERE m.space_id = ? AND m.account_id = ?
                    """, arguments: [spaceID, accountID]
            ).map { MemberRecord(accountID: $0[0], displayName: $0[1], role: SpaceRole(stored: $0[2])) }
        }
    }

    public func setRole(spaceID: String, accountID: String, role: SpaceRole) async throws -> Bool {
        let changed = try await write { db -> Bool in
            guard let current = try Self.role(spaceID: spaceID, accountID: accountID, db: db) else { return false }
            if current == .owner, role != .owner { try Self.checkNotLastOwner(spaceID: spaceID, db: db) }
            try db.executeCached(
                sql: "UPDATE memberships SET role = ? WHERE space_id = ? AND account_id = ?", arguments: [role.rawValue, spaceID, accountID])
            return true
        }
        if changed { revoke([spaceID]) }
        return changed
    }

    public func removeMember(spaceID: String, accountID: String) async throws -> Bool {
        let removed = try await write { db -> Bool in
            guard let current = try Self.role(spaceID: spaceID, accountID: accountID, db: db) else { return false }
            if current == .owner { try Self.checkNotLastOwner(spaceID: spaceID, db: db) }
            try db.executeCached(sql: "DELETE FROM memberships WHERE space_id = ? AND account_id = ?", arguments: [spaceID, accountID])
            return true
        }
        if removed { revoke([spaceID, AccountSession.accountKey(accountID)]) }
        return removed
    }

    public func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws {
        try await write { db in
            let live =
                try Int64.fetchOne(
                    cached: db, sql: "SELECT count(*) FROM invitations WHERE space_id = ? AND expires_ms > ? AND uses_left > 0",
                    arguments: [invitation.spaceID, nowMs]) ?? 0
            try SpaceLimits.checkInvitations(live: Int(live), limits: limits)
            try db.executeCached(
                sql: "INSERT INTO invitations (hash, space_id, role, uses_left, expires_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [invitation.hash, invitation.spaceID, invitation.role.rawValue, invitation.uses, invitation.expiresMs])
        }
    }

    public func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord? {
        let joined = try await write { db -> (SpaceRecord, Bool)? in
            guard
                let invitation = try Row.fetchOne(
                    cached: db,
                    sql: """
                        SELECT i.space_id, i.role, f.name FROM invitations i JOIN families f ON f.id = i.space_id
                        WHERE i.hash = ? AND i.expires_ms > ? AND i.uses_left > 0
                        """, arguments: [hash, nowMs])
            else { return nil }
            let spaceID: String = invitation[0]
            let name: String = invitation[2]
            if let current = try Self.role(spaceID: spaceID, accountID: accountID, db: db) {
                return (SpaceRecord(id: spaceID, name: name, role: current), false)
            }
            try Self.checkMembershipLimits(accountID: accountID, limits: limits, owning: false, db: db)
            let members =
                try Int64.fetchOne(cached: db, sql: "SELECT count(*) FROM memberships WHERE space_id = ?", arguments: [spaceID]) ?? 0
            try SpaceLimits.checkMembers(Int(members), limits: limits)
            let role = SpaceRole(stored: invitation[1])
            let version = try SQLiteItemStatements(db: db).bump(familyID: spaceID)
            try Self.insertMembership(spaceID: spaceID, accountID: accountID, role: role, sinceVersion: version, db: db)
            try db.executeCached(sql: "UPDATE invitations SET uses_left = uses_left - 1 WHERE hash = ?", arguments: [hash])
            return (SpaceRecord(id: spaceID, name: name, role: role), true)
        }
        guard let (space, isNew) = joined else { return nil }
        if isNew { revoke([space.id, AccountSession.accountKey(accountID)]) }
        return space
    }

    /// Tells this instance's hub that the sessions cached under `keys` (spaces, `@account`s) are stale: they go, and
    /// the spaces' streams wake and check their token again.
    func revoke(_ keys: [String]) {
        for key in keys { hub?.revokeTokens(family: key) }
    }

    static func insertMembership(spaceID: String, accountID: String, role: SpaceRole, sinceVersion: Int64, db: Database) throws {
        try db.executeCached(
            sql: "INSERT INTO memberships (space_id, account_id, role, since_version) VALUES (?, ?, ?, ?)",
            arguments: [spaceID, accountID, role.rawValue, sinceVersion])
    }

    static func role(spaceID: String, accountID: String, db: Database) throws -> SpaceRole? {
        try String.fetchOne(
            cached: db, sql: "SELECT role FROM memberships WHERE space_id = ? AND account_id = ?", arguments: [spaceID, accountID]
        ).map(SpaceRole.init(stored:))
    }

    /// 409 `last_owner` unless the space has another owner.
    static func checkNotLastOwner(spaceID: String, db: Database) throws {
        let owners =
            try Int64.fetchOne(
                cached: db, sql: "SELECT count(*) FROM memberships WHERE space_id = ? AND role = 'owner'", arguments: [spaceID]) ?? 0
        guard owners > 1 else { throw SyncError.lastOwner }
    }

    /// 403 `quota_exceeded` when the account belongs to `limits.memberships` spaces, or (`owning`) owns `limits.owned`.
    static func checkMembershipLimits(accountID: String, limits: SpaceLimits, owning: Bool, db: Database) throws {
        let row = try Row.fetchOne(
            cached: db, sql: "SELECT count(*), coalesce(sum(role = 'owner'), 0) FROM memberships WHERE account_id = ?",
            arguments: [accountID])
        let (all, owned): (Int, Int) = (row?[0] ?? 0, row?[1] ?? 0)
        try SpaceLimits.check(memberships: all, owned: owning ? owned : nil, limits: limits)
    }

    /// The spaces an account belongs to (before a change that revokes its tokens).
    static func spaceIDs(accountID: String, db: Database) throws -> [String] {
        try String.fetchAll(cached: db, sql: "SELECT space_id FROM memberships WHERE account_id = ?", arguments: [accountID])
    }

    /// 409 `last_owner` when the account is the only owner of a space that has other members.
    static func checkNotLastOwnerAnywhere(accountID: String, db: Database) throws {
        let stranded =
            try Int64.fetchOne(
                cached: db,
                sql: """
                    SELECT count(*) FROM memberships m
                    WHERE m.account_id = ?1 AND m.role = 'owner'
                      AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.role = 'owner' AND o.account_id <> ?1)
                      AND EXISTS (SELECT 1 FROM memberships o WHERE o.space_id = m.space_id AND o.account_id <> ?1)
                    """, arguments: [accountID]) ?? 0
        guard stranded == 0 else { throw SyncError.lastOwner }
    }
}
