import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import TestSupport
import Testing

/// Issue 19, item 5: the server behind a real PgBouncer 1.18 in transaction mode (`--database-pooler`): no named
/// prepared statement crosses pooled server connections, and `LISTEN` goes through a direct connection
/// (`--listen-database`), so live notices still arrive.
@Suite("Behind PgBouncer (transaction mode)", .sharingTheMachine, .enabled(if: TestPgBouncer.binary != nil, "pgbouncer is not installed"))
struct PoolerTests {
    @Test("writers, syncing readers and a live notice through a pool of 3 server connections: exact, no error")
    func transactionPooling() async throws {
        let direct = try await TestPostgres.shared.newDatabaseURL()
        let postgresPort = try #require(Int(direct.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let bouncer = try await TestPgBouncer.start(postgresPort: postgresPort)
        defer { bouncer.stop() }
        var configuration = AppConfiguration()
        configuration.database = try DatabaseURL(parsing: bouncer.url(for: direct))
        configuration.databasePooler = true
        configuration.listenDatabase = try DatabaseURL(parsing: direct)
        configuration.bcryptCost = testBcryptCost
        configuration.changesMaxDuration = .seconds(10)
        // No polling within the stream's life: a notice can only come from the LISTEN connection.
        configuration.changesPollInterval = .seconds(60)
        configuration.changesRecheckInterval = .seconds(60)
        var logger = Logger(label: "pooler")
        logger.logLevel = .warning
        let app = try await buildApplication(configuration, logger: logger)
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let api = try await APIClient.signedUp(client)
            let start = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // A live stream waits for the first write: its notice comes through the direct LISTEN connection.
            async let stream = api.call(.get, "/api/v1/changes?date=\(start)")
            try await HardeningHTTPTests.waitForStreams(client, count: 1)
            // 6 writers of 20 items each and 2 readers syncing deltas, all at once: every request looks its token
            // up, every write locks its family and every delta runs, the statements that are prepared elsewhere.
            let statuses = try await withThrowingTaskGroup(of: [HTTPResponse.Status].self) { group in
                for writer in 0..<6 {
                    group.addTask {
                        var seen: [HTTPResponse.Status] = []
                        for n in 0..<20 {
                            seen.append(try await api.call(.put, "/api/v1/contacts/w\(writer)-\(n)", body: #"{"firstName":"W\#(n)"}"#).status)
                        }
                        return seen
                    }
                }
                for _ in 0..<2 {
                    group.addTask {
                        var seen: [HTTPResponse.Status] = []
                        var date = start
                        for _ in 0..<20 {
                            let answer = try await api.call(.get, "/api/v1/ctcsync?date=\(date)")
                            seen.append(answer.status)
                            date = answer.json?["date"]?.stringValue ?? date
                        }
                        return seen
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.allSatisfy { $0 == .ok }, "\(Dictionary(grouping: statuses, by: \.code).mapValues(\.count))")
            let full = try await api.call(.get, "/api/v1/ctcsync")
            guard case .array(let items)? = full.json?["updated"] else { throw TestFailure("no list: \(full.body)") }
            #expect(items.count == 120)
            // A delta from the start date holds exactly the 120 writes.
            let delta = try await api.call(.get, "/api/v1/ctcsync?date=\(start)")
            guard case .array(let changed)? = delta.json?["updated"] else { throw TestFailure("no delta: \(delta.body)") }
            #expect(delta.json?["sync"] == .bool(true) && changed.count == 120)
            let notice = try await stream
            #expect(
                notice.status == .ok && notice.body.contains("event: change"), "the LISTEN connection heard the writes: \(notice.body.prefix(300))")
            print("pooler: \(statuses.count) requests through PgBouncer 1.18 (transaction mode, 3 server connections), all 200")
        }
    }

    @Test("--database-pooler without --listen-database is refused at start, with the reason")
    func needsListenURL() async throws {
        var configuration = AppConfiguration()
        configuration.database = try DatabaseURL(parsing: try await TestPostgres.shared.newDatabaseURL())
        configuration.databasePooler = true
        var logger = Logger(label: "pooler")
        logger.logLevel = .critical
        await #expect(throws: DatabaseURLError.self) { _ = try await buildApplication(configuration, logger: logger) }
    }
}
