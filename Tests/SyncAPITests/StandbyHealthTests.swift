import Foundation
import Logging
import PostgresNIO
@_spi(StoreTesting) import SyncStorage
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// Security audit M2: a standby whose WAL receiver stopped kept the last position it received, replayed up to it,
/// and read as 0 lag for good: in rotation with a frozen state.
@Suite("Standby health", .sharingTheMachine)
struct StandbyHealthTests {
    @Test("a standby that stops streaming from its primary is left out of reads")
    func receiverStopped() async throws {
        // A primary and a standby of the test's own: it breaks the standby's replication.
        try await TestStandby.with { try await Self.receiverStopped($0) }
    }

    static func receiverStopped(_ servers: TestStandby) async throws {
        let urls = try await servers.newDatabase()
        let primary = try OpenedStore.open(
            try DatabaseURL(parsing: urls.primary), deadline: testDeadline, timers: testTimers, logger: Logger(label: "primary"))
        let client = try OpenedStore.postgresClient(try DatabaseURL(parsing: urls.standby), logger: Logger(label: "standby"))
        let standby = Standby(store: PostgresStore(client: client, logger: Logger(label: "standby"), timers: testTimers), name: "standby")
        let checker = StandbyHealthChecker(standbys: [standby], maxLag: .seconds(5), timers: testTimers, logger: Logger(label: "checker"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await primary.runClient() }
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await primary.store.migrate()
            // Healthy once it has replayed the schema.
            try await Self.until(within: .seconds(60)) { await checker.check(standby).healthy }
            // Its receiver now points at a port nobody listens on: it stops streaming, its state freezes.
            let port = await servers.standbyPort
            let psql = ["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-q"]
            try await TestPostgres.run(
                psql + ["-c", "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=postgres'", "-c", "SELECT pg_reload_conf()"])
            try await Self.until(within: .seconds(60)) { await !checker.check(standby).healthy }
            print("standby health: \(await checker.check(standby).why)")
        }
    }

    /// Checks `condition` every 100 ms until it holds; throws past `limit`.
    static func until(within limit: Duration, _ condition: () async -> Bool) async throws {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw SyncError.invalidJSON("the condition did not hold within \(limit)")
    }
}
