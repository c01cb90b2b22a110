import Foundation
import Logging
import PostgresNIO
import SyncAPI

/// PostgreSQL's accounts, spaces, meta, expiry and emptied-space purges are the statements it shares with SQLite (`SharedSQLStore`); the
/// session lookup is its own, a prepared statement (every request whose token is not cached runs it).
extension PostgresStore: SharedSQLStore {
    public var statementExecutor: StatementExecutor { StatementExecutor(self) }

    public func session(tokenHash: String, nowMs: Int64) async throws -> (session: AccountSession, expiresMs: Int64)? {
        try await guarded { _ in
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
}
