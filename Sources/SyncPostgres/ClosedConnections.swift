import Logging
import PostgresNIO

/// The statements of the stores, refused at once on a connection that has closed.
///
/// PostgresNIO 1.33 writes a statement into the connection's channel without a promise for the write: on a channel
/// already closed (the database ended the session, a failover cut it, a pooled connection died while idle and was
/// leased before the pool saw it) the write is dropped and the statement is never answered, neither rows nor error.
/// Its caller waited for good: the request was answered 503 at its time limit (the 15 s waits seen in failovers),
/// its task stayed suspended, and `PostgresClient.query` kept its lease. So every statement goes through
/// `statement`, every transaction through `transaction`, and a statement on a client leases with `withConnection`.
package struct ConnectionClosed: Error, CustomStringConvertible {
    package var description: String { "the database connection is closed" }
}

extension PostgresConnection {
    /// `query`, or `ConnectionClosed` at once when the connection has closed.
    @discardableResult
    package func statement(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionClosed() }
        return try await self.query(query, logger: logger, file: file, line: line)
    }

    /// Runs `body` in one transaction: `COMMIT` when it returns, `ROLLBACK` when it throws (none on a closed
    /// connection: its session, and with it the transaction, ended; a `ROLLBACK` that fails closes the connection, so
    /// that the pool never hands out one left inside a transaction). Errors are thrown as they came.
    package func transaction<T: Sendable>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await statement("BEGIN", logger: logger)
        let value: T
        do {
            value = try await body(self)
        } catch {
            if !isClosed { await rollbackOrClose(logger: logger) }
            throw error
        }
        try await statement("COMMIT", logger: logger)
        return value
    }

    /// Ends the transaction the connection is in with `ROLLBACK`, or closes the connection when that fails, so that
    /// the pool never hands out a connection left inside a transaction.
    func rollbackOrClose(logger: Logger) async {
        do {
            try await statement("ROLLBACK", logger: logger)
        } catch {
            _ = close() as EventLoopFuture<Void>
        }
    }
}

extension PostgresClient {
    /// One statement on a leased connection, its rows read inside `body` (the lease ends with it).
    func statement<T: Sendable>(
        _ query: PostgresQuery, logger: Logger, _ body: (PostgresRowSequence) async throws -> T
    ) async throws -> T {
        try await withConnection { conn in try await body(try await conn.statement(query, logger: logger)) }
    }

    /// One statement on a leased connection whose rows are not read.
    func statement(_ query: PostgresQuery, logger: Logger) async throws {
        try await withConnection { conn in _ = try await conn.statement(query, logger: logger) }
    }
}
