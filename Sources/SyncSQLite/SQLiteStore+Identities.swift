import Foundation
import GRDB
import SyncCore

/// Identity accounts in SQLite (protocol §14): one per (issuer, subject); the single writer checks and creates in one
/// transaction.
extension SQLiteStore {
    public func identityAccount(issuer: String, subject: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT account_id FROM identities WHERE issuer = ? AND subject = ?", arguments: [issuer, subject])
        }
    }

    public func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool) {
        try await write { db in
            if let existing = try String.fetchOne(
                db, sql: "SELECT account_id FROM identities WHERE issuer = ? AND subject = ?", arguments: [issuer, subject])
            {
                return (existing, false)
            }
            try db.executeCached(
                sql: "INSERT INTO families (id, name, version, created_ms) VALUES (?, ?, 0, ?)", arguments: [space.id, space.name, nowMs])
            let version = try Self.insertAccount(account, familyID: space.id, nowMs: nowMs, db: db)
            if space.member {
                if let item = space.familyItem { try SQLiteItemStatements(db: db).store(item, familyID: space.id, version: version, nowMs: nowMs) }
                try Self.insertMembership(spaceID: space.id, accountID: account.id, role: .owner, sinceVersion: 0, db: db)
            }
            try db.executeCached(
                sql: "INSERT INTO identities (issuer, subject, account_id, created_ms) VALUES (?, ?, ?, ?)",
                arguments: [issuer, subject, account.id, nowMs])
            return (account.id, true)
        }
    }
}
