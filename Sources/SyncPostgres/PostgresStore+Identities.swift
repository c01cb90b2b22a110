import Foundation
import Logging
import PostgresNIO
import SyncCore

/// Identity accounts in PostgreSQL (protocol §14): one per (issuer, subject), made by its first exchange. Two first
/// exchanges of one identity at once make one account: the second's insert of the identity waits for the first's
/// commit, finds the row, and its whole transaction is undone.
extension PostgresStore {
    public func identityAccount(issuer: String, subject: String) async throws -> String? {
        try await guarded {
            for try await id in try await client.query(
                "SELECT account_id FROM identities WHERE issuer = \(issuer) AND subject = \(subject)", logger: logger
            ).decode(String.self) {
                return id
            }
            return nil
        }
    }

    public func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool) {
        do {
            try await guarded {
                try await transaction { conn in
                    try await conn.query(
                        "INSERT INTO families (id, name, version, created_ms) VALUES (\(space.id), \(space.name), 0, \(nowMs))",
                        logger: logger)
                    let version = try await insertAccount(account, familyID: space.id, nowMs: nowMs, on: conn)
                    if space.member {
                        if let item = space.familyItem {
                            _ = try await PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements).store(
                                item, familyID: space.id, version: version, nowMs: nowMs)
                        }
                        try await insertMembership(spaceID: space.id, accountID: account.id, role: .owner, sinceVersion: 0, on: conn)
                    }
                    var inserted = false
                    for try await _ in try await conn.query(
                        """
                        INSERT INTO identities (issuer, subject, account_id, created_ms) VALUES (\(issuer), \(subject), \(account.id), \(nowMs))
                        ON CONFLICT DO NOTHING RETURNING 1
                        """, logger: logger)
                    {
                        inserted = true
                    }
                    guard inserted else { throw IdentityTaken() }
                }
            }
            return (account.id, true)
        } catch is IdentityTaken {
            guard let existing = try await identityAccount(issuer: issuer, subject: subject) else { throw SyncError.invalidCredentials }
            return (existing, false)
        }
    }
}

/// Another exchange made the identity's account first (its transaction is undone).
struct IdentityTaken: Error {}
