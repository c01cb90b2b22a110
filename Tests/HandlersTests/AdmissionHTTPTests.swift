import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Issue 16, item 6 over HTTP: admission before the database, IPv6 counted by /64, and no lock-out by a stranger.
@Suite("Admission over HTTP", .sharingTheMachine)
struct AdmissionHTTPTests {
    static func login(_ api: APIClient, _ username: String, _ password: String, from address: String) async throws -> APIClient.Answer {
        try await HardeningHTTPTests.login(api, username, password, from: address)
    }

    @Test("100 logins from one address: the burst reaches the throttle, the rest is refused in memory", arguments: Backend.allCases)
    func flood(backend: Backend) async throws {
        try await TestApp.run(
            backend,
            configure: {
                HardeningHTTPTests.proxied(&$0)
                $0.loginRate = .init(burst: 30, perMinute: 1)  // no refill while the test runs on a loaded machine
                // Were the refused attempts counted in the database, the username would lock at the 32nd.
                $0.accounts.maxFailuresPerUsername = 31
                $0.accounts.maxFailuresPerPair = 1000
                $0.accounts.maxFailuresPerAddress = 1000
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            var statuses: [Int: Int] = [:]
            var retryAfter = true
            for _ in 0..<100 {
                let answer = try await Self.login(api, "alice", "wrong-guess", from: "10.0.0.1")
                statuses[answer.status.code, default: 0] += 1
                if answer.status == .tooManyRequests { retryAfter = retryAfter && Int(answer.headers[.retryAfter] ?? "") ?? 0 > 0 }
            }
            #expect(statuses == [401: 30, 429: 70], "\(statuses)")
            #expect(retryAfter)
            #expect(try await Self.login(api, "alice", "password1", from: "10.0.0.2").status == .ok)
            print("login flood (\(backend)): 100 from one address → \(statuses)")
        }
    }

    @Test("signups: a burst per address, then 429; another address signs up")
    func signupFlood() async throws {
        try await TestApp.run(
            .sqlite,
            configure: {
                HardeningHTTPTests.proxied(&$0)
                $0.signupRate = .init(burst: 10, perMinute: 1)  // no refill while the test runs on a loaded machine
            }
        ) { client in
            let api = APIClient(client: client)
            var statuses: [Int: Int] = [:]
            for n in 0..<15 {
                let answer = try await api.call(
                    .post, "/api/v1/signup", body: #"{"family":"F","username":"user\#(n)","password":"password1"}"#,
                    headers: [HTTPField.Name("X-Forwarded-For")!: "10.3.0.1"])
                statuses[answer.status.code, default: 0] += 1
            }
            #expect(statuses == [201: 10, 429: 5], "\(statuses)")
            let other = try await api.call(
                .post, "/api/v1/signup", body: #"{"family":"F","username":"other","password":"password1"}"#,
                headers: [HTTPField.Name("X-Forwarded-For")!: "10.3.0.2"])
            #expect(other.status == .created)
        }
    }

    @Test("40 addresses of one IPv6 /64 spraying 40 usernames: the 31st failure is 429 (one client)")
    func ipv6Spraying() async throws {
        try await TestApp.run(
            .sqlite,
            configure: {
                HardeningHTTPTests.proxied(&$0)
                $0.loginRate = .init(burst: 1000, perMinute: 1000)  // the database rule alone
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            var statuses: [Int] = []
            for n in 0..<40 {
                statuses.append(try await Self.login(api, "user\(n)", "guess-guess", from: "2001:db8:7:7::\(n + 1)").status.code)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == 401 } && statuses.dropFirst(30).allSatisfy { $0 == 429 }, "\(statuses)")
            #expect(try await Self.login(api, "alice", "password1", from: "2001:db8:7:8::1").status == .ok)
        }
    }

    @Test("a stranger cannot lock a user out: an address that logged in before passes the username-wide rule", arguments: Backend.allCases)
    func noLockOut(backend: Backend) async throws {
        try await TestApp.run(
            backend,
            configure: {
                HardeningHTTPTests.proxied(&$0)
                $0.accounts.maxFailuresPerUsername = 6
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await Self.login(api, "alice", "password1", from: "10.5.0.1").status == .ok)
            for n in 0..<8 { _ = try await Self.login(api, "alice", "guess-guess", from: "10.6.0.\(n)") }
            #expect(try await Self.login(api, "alice", "password1", from: "10.7.0.1").status == .tooManyRequests, "a new address")
            #expect(try await Self.login(api, "alice", "password1", from: "10.5.0.1").status == .ok, "the user's own address")
            // The pair rule still holds for a known address.
            var pair: [Int] = []
            for _ in 0..<12 { pair.append(try await Self.login(api, "alice", "guess-guess", from: "10.5.0.1").status.code) }
            #expect(pair.last == 429)
        }
    }
}
