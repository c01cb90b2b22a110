import Logging
import PostgresNIO
import SyncAPI

/// A leased PostgreSQL connection as the statements shared with SQLite see it (`AccountStatements`, `SpaceStatements`):
/// their parameters bound as `$n`, their rows read by the cells' types, and revocations notified in the transaction,
/// so that every instance hears them at the commit.
package struct PostgresSQLConnection: SQLConnection {
    let conn: PostgresConnection
    let logger: Logger
    let prepared: Bool

    package var dialect: SQLDialect { .postgres }
    package var items: PostgresItemStatements { PostgresItemStatements(conn: conn, logger: logger, prepared: prepared) }

    package func rows(_ sql: SharedSQL) async throws -> [SQLRow] {
        let (text, values) = sql.rendered(for: .postgres)
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): bindings.append(text)
            case .int(let int): bindings.append(int)
            case .bool(let bool): bindings.append(bool)
            case .texts(let texts): bindings.append(texts)
            case .null: bindings.appendNull()
            }
        }
        do {
            var out: [SQLRow] = []
            for try await row in try await conn.statement(PostgresQuery(unsafeSQL: text, binds: bindings), logger: logger) {
                out.append(SQLRow(try row.map(Self.value)))
            }
            return out
        } catch let error as PSQLError {
            switch error.serverInfo?[.sqlState] {
            case "23505": throw SQLConstraintViolation.unique
            case "23503": throw SQLConstraintViolation.foreignKey
            default: throw error
            }
        }
    }

    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .bool: return .bool(try cell.decode(Bool.self))
        case .int2, .int4, .int8: return .int(try cell.decode(Int64.self))
        default: return .text(try cell.decode(String.self))
        }
    }

    package func revokeAtCommit(_ keys: [String]) async throws {
        try await conn.statement(
            """
            SELECT pg_notify(\(PostgresChangeListener.channel), \(PostgresChangeListener.revocationPrefix) || k)
            FROM unnest(\(keys)::text[]) AS k
            """, logger: logger)
    }
}

/// PostgreSQL as the shared statements' executor: every call guarded (its deadline, its retry after a serialization
/// failure, 503 for an outage), a transaction a write that begins only within its request's deadline.
extension PostgresStore: SQLExecutor {
    package func inSQLTransaction<T: Sendable>(
        within limit: Duration?, _ body: @escaping @Sendable (PostgresSQLConnection) async throws -> T
    ) async throws -> T {
        try await guarded(within: limit) { budget in try await transaction(under: budget) { conn in try await body(sqlConnection(conn)) } }
    }

    package func inSQLStatements<T: Sendable>(
        writes: Bool, within limit: Duration?, _ body: @escaping @Sendable (PostgresSQLConnection) async throws -> T
    ) async throws -> T {
        try await guarded(within: limit) { _ in try await client.withConnection { conn in try await body(sqlConnection(conn)) } }
    }

    private func sqlConnection(_ conn: PostgresConnection) -> PostgresSQLConnection {
        PostgresSQLConnection(conn: conn, logger: logger, prepared: usesPreparedStatements)
    }
}
