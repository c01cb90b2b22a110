import Foundation
import GRDB
import SyncAPI

/// SQLite's accounts, spaces, meta, expiry and emptied-space purges are the statements it shares with PostgreSQL (`SharedSQLStore`); the
/// session lookup is its own, and so is the revocation of cached sessions after a commit.
extension SQLiteStore: SharedSQLStore {
    public var statementExecutor: StatementExecutor { StatementExecutor(self) }

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

    /// Tells this instance's hub that the sessions cached under `keys` (spaces, `@account`s) are stale: they go, and
    /// the spaces' streams wake and check their token again.
    func revoke(_ keys: [String]) {
        for key in keys { hub?.revokeTokens(family: key) }
    }
}
