import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// The token check is off the per-request database path (issue 9), and a revoked token still stops at once: on the
/// instance that revoked it before it answers, on every other instance by the revocation notice.
@Suite("Cached sessions", .sharingTheMachine)
struct SessionCacheHTTPTests {
    @Test("a known token costs no lookup: 41 requests look it up once or twice, not 41 times")
    func noLookup() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL(logStatements: true)
        let app = try await LiveHubTests.app(try DatabaseURL(parsing: url), maxDuration: .seconds(5))
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            for _ in 0..<40 { #expect(try await api.call(.get, "/api/v1/contacts/c1").status == .ok) }
            // The server log holds every statement's parameters: count the lookups of this token.
            let hash = BearerToken.storageHash(try #require(api.token))
            let log = try String(contentsOfFile: try await TestPostgres.shared.log(), encoding: .utf8)
            let lookups = log.components(separatedBy: "\n").filter { $0.contains("parameters: $1 = '\(hash)'") }.count
            print("sessions: 41 requests looked their token up \(lookups) time(s)")
            // Once, or twice when the first request came before the instance's listener was up (the cache starts off).
            #expect((1...2).contains(lookups))
        }
    }

    @Test("logout and password change on one instance stop the token on another long before its cache entry would")
    func revokedEverywhere() async throws {
        let url = try DatabaseURL(parsing: try await TestPostgres.shared.newDatabaseURL())
        let first = try await LiveHubTests.app(url, maxDuration: .seconds(5))
        let second = try await LiveHubTests.app(url, maxDuration: .seconds(5))
        try await HangWatch.watched(first, "first", mode: .router) { one in
            try await HangWatch.watched(second, "second", mode: .router) { two in
                let alice = try await APIClient.signedUp(one)
                let login = #"{"username":"alice","password":"password1"}"#
                for revoke in ["logout", "password"] {
                    // A second token of the account, used (so cached) on the other instance.
                    let other = try #require(try await APIClient(client: one).call(.post, "/api/v1/login", body: login).json?["token"])
                    let elsewhere = APIClient(client: two, token: other.stringValue)
                    let here = APIClient(client: one, token: other.stringValue)
                    #expect(try await elsewhere.call(.get, "/api/v1/ctcsync").status == .ok)
                    #expect(try await here.call(.get, "/api/v1/ctcsync").status == .ok)
                    if revoke == "logout" {
                        #expect(try await here.call(.post, "/api/v1/logout").status == .noContent)
                    } else {
                        let body = #"{"oldPassword":"password1","newPassword":"password1"}"#
                        #expect(try await alice.call(.post, "/api/v1/password", body: body).status == .noContent)
                    }
                    // At once on the instance that revoked it.
                    #expect(try await here.call(.get, "/api/v1/ctcsync").status == .unauthorized, "\(revoke)")
                    let revoked = ContinuousClock.now
                    var status = HTTPResponse.Status.ok
                    // The revocation notice: well under a second here. Without it the cached entry would be accepted for
                    // its 60 s: the ceiling is for a loaded machine and still well below that.
                    while status != .unauthorized, ContinuousClock.now - revoked < .seconds(30) {
                        status = try await elsewhere.call(.get, "/api/v1/ctcsync").status
                        if status != .unauthorized { try await Task.sleep(for: .milliseconds(20)) }
                    }
                    #expect(status == .unauthorized, "\(revoke): still accepted elsewhere 30 s later")
                    #expect(try await alice.call(.get, "/api/v1/ctcsync").status == .ok)
                }
            }
        }
    }

    /// The test stops PostgreSQL backends (SIGSTOP), so it runs on a PostgreSQL of its own: a backend stopped while it
    /// held a lock of the shared cluster would stall every other test's writes.
    @Test("a listener gone deaf without failing is noticed: a revocation elsewhere stops the token long before the cache would")
    func deafListener() async throws {
        try await TestPostgres.withOwn { try await Self.deafListener(on: $0) }
    }

    static func deafListener(on postgres: TestPostgres) async throws {
        let url = try await postgres.newDatabaseURL()
        let database = try DatabaseURL(parsing: url)
        let first = try await LiveHubTests.app(database, maxDuration: .seconds(5))
        let second = try await LiveHubTests.app(database, maxDuration: .seconds(5))
        try await HangWatch.watched(first, "first", mode: .router) { one in
            try await HangWatch.watched(second, "second", mode: .router) { two in
                let alice = try await APIClient.signedUp(one)
                let login = #"{"username":"alice","password":"password1"}"#
                let token = try #require(try await APIClient(client: one).call(.post, "/api/v1/login", body: login).json?["token"])
                let here = APIClient(client: one, token: token.stringValue)
                let elsewhere = APIClient(client: two, token: token.stringValue)
                #expect(try await elsewhere.call(.get, "/api/v1/ctcsync").status == .ok)
                // Both instances' LISTEN backends stop answering, their connections open: no reset ever arrives.
                let name = String(url.split(separator: "/").last!)
                let pids = try await TestPostgres.run([
                    "psql", "-h", "127.0.0.1", "-p", String(url.split(separator: ":").last!.split(separator: "/").first!), "-U", "postgres",
                    "-d", name, "-Atc", "SELECT pid FROM pg_stat_activity WHERE datname = '\(name)' AND query LIKE 'LISTEN%'",
                ]).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
                #expect(pids.count == 2, "\(pids)")
                for pid in pids.compactMap({ pid_t($0) }) { kill(pid, SIGSTOP) }
                defer { for pid in pids.compactMap({ pid_t($0) }) { kill(pid, SIGCONT) } }
                #expect(try await here.call(.post, "/api/v1/logout").status == .noContent)
                let revoked = ContinuousClock.now
                var status = HTTPResponse.Status.ok
                while status != .unauthorized, ContinuousClock.now - revoked < .seconds(40) {
                    status = try await elsewhere.call(.get, "/api/v1/ctcsync").status
                    if status != .unauthorized { try await Task.sleep(for: .milliseconds(100)) }
                }
                let seconds = (ContinuousClock.now - revoked) / .seconds(1)
                print("deaf listener: the revoked token stopped on the other instance after \(seconds) s")
                // Pings every 2 s; one unheard for 1 s turns the cache off (before: only once found deaf, unheard for 5 s
                // and then 5 s for the connection's own query: 11.2–11.9 s here). Without the heartbeat the cached
                // session would be accepted until its entry ages out (60 s): the ceiling is generous for a loaded
                // machine and still well below that.
                #expect(status == .unauthorized, "still accepted \(seconds) s later")
                #expect(try await alice.call(.get, "/api/v1/ctcsync").status == .ok)
            }
        }
    }
}
