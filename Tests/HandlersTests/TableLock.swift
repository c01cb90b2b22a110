import Foundation
import Logging
import PostgresNIO
import SyncAPI
import TestSupport

/// A table of a test's own PostgreSQL database held `ACCESS EXCLUSIVE` by a connection of the test, so that the
/// server's statements on it wait for as long as the test decides: a slow database on demand, with no fixed sleep
/// deciding whether the test sees what it needs.
struct TableLock {
    let database: DatabaseURL
    let table: String
    /// Only its rows, `FOR UPDATE`: writers that lock them wait, plain reads go on.
    var rowsOnly = false

    /// Holds the lock while `body` runs, then commits (the waiting statements go on).
    func holding<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard case .postgres(let host, let port, let username, _, let name, _) = database else { throw TestFailure("not PostgreSQL") }
        let logger = Logger(label: "table-lock")
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: host, port: port, username: username, password: nil, database: name, tls: .disable), id: 1,
            logger: logger)
        do {
            try await connection.query("BEGIN", logger: logger)
            let lock = rowsOnly ? "SELECT 1 FROM \(table) FOR UPDATE" : "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE"
            try await connection.query(PostgresQuery(unsafeSQL: lock), logger: logger)
            let value = try await body()
            try await connection.query("COMMIT", logger: logger)
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// The database's sessions now (state, what each waits for, its transaction's age, its statement), and the locks
    /// not granted: for a failure's message.
    func sessions() async throws -> String {
        guard case .postgres(let host, let port, _, _, let name, _) = database else { throw TestFailure("not PostgreSQL") }
        let query =
            "SELECT pid, state, wait_event_type, wait_event, now() - xact_start AS xact_age, left(query, 80) FROM pg_stat_activity"
            + " WHERE datname = '\(name)' AND pid <> pg_backend_pid(); SELECT pid, locktype, relation::regclass, mode FROM pg_locks WHERE NOT granted"
        return try await TestPostgres.run(["psql", "-h", host, "-p", "\(port)", "-U", "postgres", "-d", name, "-Atc", query])
    }

    /// Waits (up to 60 s) until a statement of the database waits for a lock: the server reached the table.
    func waitForWaiter() async throws {
        guard case .postgres(let host, let port, _, _, let name, _) = database else { throw TestFailure("not PostgreSQL") }
        let query = "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND wait_event_type = 'Lock'"
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let count = try await TestPostgres.run(["psql", "-h", host, "-p", "\(port)", "-U", "postgres", "-d", name, "-Atc", query])
            if count.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("no statement waited for \(table) within 60 s")
    }
}
