import Logging
import PostgresNIO
import SyncAPI

/// Counts the transactions that other sessions commit on one test database (`pg_stat_database`), to prove what a
/// path costs the database rather than how fast it ran.
struct TransactionProbe: Sendable {
    let client: PostgresClient

    init(url: String) {
        let port = Int(url.split(separator: ":").last!.split(separator: "/").first!)!
        client = PostgresClient(
            configuration: .init(
                host: "127.0.0.1", port: port, username: "postgres", password: nil, database: String(url.split(separator: "/").last!),
                tls: .disable),
            backgroundLogger: Logger(label: "probe"))
    }

    /// Runs `body` while the probe's client runs.
    func run<T: Sendable>(_ body: @Sendable (TransactionProbe) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(self)
        }
    }

    /// Committed and rolled back transactions so far (statistics reach the view within about a second).
    func transactions() async throws -> Int64 {
        _ = try await client.query("SELECT pg_stat_clear_snapshot()")
        var count: Int64 = 0
        for try await n in try await client.query(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        ).decode(Int64.self) { count = n }
        return count
    }

    /// The count once every pooled connection has reported what it did so far.
    ///
    /// PostgreSQL 15 adds a session's transactions to `pg_stat_database` at its next transaction a second or more after
    /// its last report, never while it stays idle (measured: of 54 transactions on 18 idle sessions, 36 were still
    /// unreported 14 s later). A pool's connection reports with its next keep-alive ping (`keepAliveFrequency`), so
    /// work done just before a count reaches the view one ping later, inside whatever is measured next.
    func flushed() async throws -> Int64 {
        try await Task.sleep(for: PoolSize.keepAliveFrequency + .milliseconds(1500))
        return try await transactions()
    }

    /// The count once it stops moving (earlier work over and reported): at most 3 more in 1.2 s, after a keep-alive.
    func settled() async throws -> Int64 {
        var before = try await flushed()
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(1200))
            let now = try await transactions()
            defer { before = now }
            if now - before <= 3 { break }
        }
        return before
    }
}
