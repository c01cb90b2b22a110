import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// A write made while this instance's `LISTEN` backend is frozen (SIGSTOP: its connection open, no notice ever
/// delivered) reaches this instance's streams within seconds: the listener, its ping unheard, reads the followed families'
/// counters in one statement and wakes the family that moved (issue 53). Before, streams learned it only once the
/// listener was found deaf and replaced (about 11 s), or at their 30 s recheck.
@Suite("A frozen change listener", .sharingTheMachine)
struct FrozenListenerTests {
    /// The test stops a PostgreSQL backend, so it runs on a PostgreSQL of its own (see `SessionCacheHTTPTests`).
    @Test("a write while the listener is frozen reaches an open stream in seconds, long before the listener is replaced")
    func writeWhileFrozen() async throws {
        try await TestPostgres.withOwn { try await Self.writeWhileFrozen(on: $0) }
    }

    static func writeWhileFrozen(on postgres: TestPostgres) async throws {
        let url = try await postgres.newDatabaseURL()
        let app = try await LiveHubTests.app(try DatabaseURL(parsing: url), maxDuration: .seconds(3600))
        try await HangWatch.watched(app, "app", mode: .live) { client in
            let api = try await APIClient.signedUp(client)
            let port = try #require(client.port)
            let stream = try EventStreamReader(port: port, path: "/api/v1/changes", token: api.token)
            let first = try await stream.next(where: { $0.name == "change" })
            let name = String(url.split(separator: "/").last!)
            let pids = try await TestPostgres.run([
                "psql", "-h", "127.0.0.1", "-p", String(url.split(separator: ":").last!.split(separator: "/").first!), "-U", "postgres",
                "-d", name, "-Atc", "SELECT pid FROM pg_stat_activity WHERE datname = '\(name)' AND query LIKE 'LISTEN%'",
            ]).split(separator: "\n").compactMap { pid_t($0) }
            #expect(pids.count == 1, "\(pids)")
            for pid in pids { kill(pid, SIGSTOP) }
            defer { for pid in pids { kill(pid, SIGCONT) } }
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Frozen"}"#).status == .ok)
            let wrote = ContinuousClock.now
            let events = try await stream.next(where: { $0.name == "change" && $0 != first.last })
            let seconds = (ContinuousClock.now - wrote) / .seconds(1)
            print("frozen listener: the write reached the stream \(seconds) s after it was acknowledged")
            // 2.1 to 2.8 s measured (pings every 2 s, a catch-up once one is unheard for 1 s); 11.9 s before, when only the
            // listener's replacement (5 s unheard, then 5 s for its own query) woke the stream. The ceiling leaves a
            // loaded machine room and still fails that path.
            #expect(seconds < 9, "\(seconds) s: \(events)")
            stream.disconnect()
        }
    }
}
