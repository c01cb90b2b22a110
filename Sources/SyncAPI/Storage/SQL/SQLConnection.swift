/// One backend connection, lent for one transaction or one statement, as the statements shared by both backends see
/// it (`AccountStatements`, `SpaceStatements`, `MetaStatements`, `PurgeStatements`).
package protocol SQLConnection: Sendable {
    associatedtype Items: ItemStatements

    var dialect: SQLDialect { get }
    /// The item statements on the same connection, in the same transaction.
    var items: Items { get }
    /// Runs `sql` and returns its rows. A unique or foreign key violation throws `SQLConstraintViolation`.
    func rows(_ sql: SharedSQL) async throws -> [SQLRow]
    /// Revokes the sessions cached under `keys` (spaces, `@account`s) on every instance once the transaction commits,
    /// and wakes the spaces' streams, which check their token again; nothing when it rolls back.
    func revokeAtCommit(_ keys: [String]) async throws
}

extension SQLConnection {
    /// Runs `sql`, whose rows (if any) are not needed.
    package func execute(_ sql: SharedSQL) async throws { _ = try await rows(sql) }

    /// The first row of `sql`, if any.
    package func row(_ sql: SharedSQL) async throws -> SQLRow? { try await rows(sql).first }

    /// The first column of the first row, as an integer (a count).
    package func count(_ sql: SharedSQL) async throws -> Int { Int(try await row(sql)?.int(0) ?? 0) }
}

/// A row of a shared statement: its columns as values, read by position.
package struct SQLRow: Sendable {
    package let values: [SQLValue]

    package init(_ values: [SQLValue]) { self.values = values }

    package func text(_ column: Int) -> String {
        if case .text(let text) = values[column] { return text }
        return ""
    }

    package func int(_ column: Int) -> Int64 {
        switch values[column] {
        case .int(let value): value
        case .bool(let value): value ? 1 : 0
        default: 0
        }
    }

    /// Whether the column is SQL NULL (`text` and `int` read it as "" and 0).
    package func isNull(_ column: Int) -> Bool { values[column] == .null }

    /// SQLite has no boolean type: an integer is true when not zero.
    package func bool(_ column: Int) -> Bool {
        switch values[column] {
        case .bool(let value): value
        case .int(let value): value != 0
        default: false
        }
    }
}

/// A constraint the database refused a shared statement for: the statements turn it into a domain error.
package enum SQLConstraintViolation: Error, Equatable {
    case unique
    case foreignKey
}

/// A backend as the shared statements see it: how to lend a connection for a write transaction, or for statements
/// that each commit alone, each call bounded by the store's deadline unless it names a limit of its own (a background
/// job's batch).
package protocol SQLExecutor: Sendable {
    associatedtype Connection: SQLConnection

    /// Runs `body` in one write transaction, committed when it returns and rolled back when it throws. A backend may
    /// run `body` again after a serialization failure, so it must have no effect outside the database.
    func inSQLTransaction<T: Sendable>(within limit: Duration?, _ body: @escaping @Sendable (Connection) async throws -> T) async throws -> T
    /// Runs `body`, whose statements each commit alone (`writes`: some of them write).
    func inSQLStatements<T: Sendable>(
        writes: Bool, within limit: Duration?, _ body: @escaping @Sendable (Connection) async throws -> T
    ) async throws -> T
}

extension SQLExecutor {
    package func inSQLTransaction<T: Sendable>(_ body: @escaping @Sendable (Connection) async throws -> T) async throws -> T {
        try await inSQLTransaction(within: nil, body)
    }

    package func inSQLStatements<T: Sendable>(writes: Bool, _ body: @escaping @Sendable (Connection) async throws -> T) async throws -> T {
        try await inSQLStatements(writes: writes, within: nil, body)
    }
}
