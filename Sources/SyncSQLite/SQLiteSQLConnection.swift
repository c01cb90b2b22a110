import Foundation
import GRDB
import SyncAPI

/// The GRDB connection of one access as the statements shared with PostgreSQL see it (`AccountStatements`,
/// `SpaceStatements`): their parameters bound as `?n`, lists as JSON arrays read by `json_each`, every statement parsed
/// once per connection. Revocations are collected and made by the executor after the commit.
///
/// Used only on the connection's thread, inside the access that lent it (`ConnectionThreadExecutor`), hence
/// `@unchecked Sendable`.
package final class SQLiteSQLConnection: SQLConnection, @unchecked Sendable {
    let db: Database
    /// The keys to revoke once the transaction commits.
    private(set) var revoked: [String] = []

    init(db: Database) { self.db = db }

    package var dialect: SQLDialect { .sqlite }
    package var items: SQLiteItemStatements { SQLiteItemStatements(db: db) }

    package func rows(_ sql: SharedSQL) throws -> [SQLRow] {
        let (text, values) = sql.rendered(for: .sqlite)
        let arguments = StatementArguments(try values.map(Self.argument))
        do {
            let statement = try db.cachedStatement(sql: text)
            guard statement.columnCount > 0 else {
                try statement.execute(arguments: arguments)
                return []
            }
            var out: [SQLRow] = []
            let cursor = try Row.fetchCursor(statement, arguments: arguments)
            while let row = try cursor.next() {
                out.append(SQLRow((0..<row.count).map { Self.value(row[$0] as DatabaseValue) }))
            }
            return out
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw SQLConstraintViolation.unique
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw SQLConstraintViolation.foreignKey
        }
    }

    package func revokeAtCommit(_ keys: [String]) { revoked += keys }

    private static func argument(_ value: SQLValue) throws -> (any DatabaseValueConvertible)? {
        switch value {
        case .text(let text): text
        case .int(let int): int
        case .bool(let bool): bool
        case .texts(let texts): String(decoding: try JSONSerialization.data(withJSONObject: texts), as: UTF8.self)
        case .null: nil
        }
    }

    private static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let int): .int(int)
        case .double(let double): .int(Int64(double))
        case .string(let text): .text(text)
        case .blob(let data): .text(String(decoding: data, as: UTF8.self))
        }
    }
}

/// SQLite as the shared statements' executor: a transaction is the single writer's, statements that only read use a
/// reader's WAL snapshot; the shared code runs on the connection's own thread (`ConnectionThreadExecutor`).
extension SQLiteStore: SQLExecutor {
    /// SQLite's calls have no deadline of their own (a busy writer waits its busy timeout): `limit` changes nothing.
    package func inSQLTransaction<T: Sendable>(
        within limit: Duration?, _ body: @escaping @Sendable (SQLiteSQLConnection) async throws -> T
    ) async throws -> T {
        let (result, revoked) = try await write { db in
            let connection = SQLiteSQLConnection(db: db)
            let result = try ConnectionThreadExecutor.run { try await body(connection) }
            return (result, connection.revoked)
        }
        // The cached sessions go, and the spaces' streams wake and check their token again.
        revoke(revoked)
        return result
    }

    package func inSQLStatements<T: Sendable>(
        writes: Bool, within limit: Duration?, _ body: @escaping @Sendable (SQLiteSQLConnection) async throws -> T
    ) async throws -> T {
        if writes { return try await inSQLTransaction(body) }
        return try await read { db in
            let connection = SQLiteSQLConnection(db: db)
            return try ConnectionThreadExecutor.run { try await body(connection) }
        }
    }
}
