import NIOCore
import PostgresNIO
import SyncAPI
import Synchronization

/// A read-only snapshot whose `START TRANSACTION` and `COMMIT` take no round trip of their own.
///
/// PostgresNIO sends a connection's statements one after the other, in the order they were written to it. So the
/// `START TRANSACTION` is written without waiting for its answer and the body's first statement follows it on the
/// wire; the `COMMIT` is written as the body returns and the connection goes back to the pool at once: whoever leases
/// it next has its statements sent after the `COMMIT`. An app-start group takes three round trips (its deltas, two
/// pages) instead of five (with the begin and the commit); a group of deltas takes one instead of three.
///
/// Why the order holds: each write is either made on the connection's event loop, at once, or queued to it, and the
/// loop runs what is queued in order. A later write made on the loop comes from a task resumed by the loop after the
/// earlier write was queued (the task was elsewhere when it made it), so it runs after it too.
/// `PostgresSnapshotTests` runs many snapshots at once and checks that each body's first statement is inside its
/// transaction.
extension PostgresStore {
    /// Runs `body` on a connection of `pool` inside one REPEATABLE READ, READ ONLY transaction. A `START TRANSACTION`
    /// that failed fails the call once the body returns, even if its statements answered (they would not have read
    /// one snapshot). A `COMMIT` that fails closes the connection, so the pool never hands out a connection left
    /// inside the transaction; a body that throws rolls back and waits for it.
    func snapshot<T: Sendable>(on pool: PostgresClient, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await pool.withConnection { conn in
            let begin = StatementOutcome()
            let begun: EventLoopFuture<PostgresQueryResult> = conn.query(
                "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            // Runs on the event loop as the answer comes, before the answer of any statement written after it: once
            // the body has read a statement's answer, the outcome of the `START TRANSACTION` is known here, no hop.
            begun.whenFailure { begin.fail($0) }
            let value: T
            do {
                value = try await body(conn)
                if let error = begin.error { throw error }
            } catch {
                await conn.rollbackOrClose(logger: logger)
                throw error
            }
            let committed: EventLoopFuture<PostgresQueryResult> = conn.query("COMMIT", logger: logger)
            committed.whenFailure { [logger] error in
                // The pool closing its connections (shutdown) fails a `COMMIT` still queued: nothing to report.
                if (error as? PSQLError)?.code != .clientClosedConnection {
                    logger.warning(
                        "a read-only snapshot's COMMIT failed; its connection is closed", metadata: ["error": "\(String(reflecting: error))"])
                }
                _ = conn.close() as EventLoopFuture<Void>
            }
            return value
        }
    }
}

/// The failure of a statement whose answer nobody waits for, kept for whoever checks it later.
final class StatementOutcome: Sendable {
    private let failure = Mutex<(any Error)?>(nil)

    func fail(_ error: any Error) { failure.withLock { $0 = error } }

    var error: (any Error)? { failure.withLock { $0 } }
}
