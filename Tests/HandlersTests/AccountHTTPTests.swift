import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Account rules that golden files cannot show compactly: throttling, signup switch, token lifetime.
@Suite("Accounts over HTTP", .sharingTheMachine)
struct AccountHTTPTests {
    @Test("after 10 failed logins, 429 with Retry-After even for the right password", arguments: Backend.allCases)
    func throttling(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            _ = try await APIClient.signedUp(client, username: "alice")
            let anonymous = APIClient(client: client)
            for _ in 0..<10 {
                let wrong = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"wrong pass"}"#)
                #expect(wrong.status == .unauthorized)
            }
            let blocked = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"ALICE","password":"password1"}"#)
            #expect(blocked.status == .tooManyRequests)
            #expect(blocked.json?["code"] == .string("too_many_requests"))
            let retryAfter = try #require(blocked.headers[.retryAfter].flatMap(Int.init))
            #expect((1...900).contains(retryAfter))
            // Another username is not affected.
            let other = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"bob","password":"wrong pass"}"#)
            #expect(other.status == .unauthorized)
        }
    }

    @Test("a success resets the failure count", arguments: Backend.allCases)
    func successResets(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            _ = try await APIClient.signedUp(client, username: "alice")
            let anonymous = APIClient(client: client)
            for _ in 0..<9 { _ = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"wrong pass"}"#) }
            let first = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#)
            #expect(first.status == .ok)
            for _ in 0..<9 { _ = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"wrong pass"}"#) }
            let second = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#)
            #expect(second.status == .ok)
        }
    }

    @Test("signup can be turned off: 403 signup_disabled")
    func signupDisabled() async throws {
        try await TestApp.run(.sqlite, configure: { $0.accounts.signupEnabled = false }) { client in
            let answer = try await APIClient(client: client).call(
                .post, "/api/v1/signup", body: #"{"family":"S","username":"alice","password":"password1"}"#)
            #expect(answer.status == .forbidden)
            #expect(answer.json?["code"] == .string("signup_disabled"))
            let description = try await APIClient(client: client).call(.get, "/api/v1/")
            #expect(description.json?["signup"] == .bool(false))
        }
    }

    @Test("the Authorization header: the scheme in any case, one or two spaces; anything else is 401")
    func authorizationForms() async throws {
        try await TestApp.run(.sqlite) { client in
            let token = try #require(try await APIClient.signedUp(client).token)
            let plain = APIClient(client: client)
            for accepted in ["Bearer \(token)", "bearer \(token)", "BEARER \(token)", "  Bearer \(token)", "Bearer  \(token)"] {
                let answer = try await plain.call(.get, "/api/v1/ctcsync", headers: [.authorization: accepted])
                #expect(answer.status == .ok, "\(accepted)")
            }
            let refused = [
                "Bearer", "Bearer ", "Bearer  ", "Bearer   \(token)", "Bearerx \(token)", "Basic \(token)", "Bear \(token)", token,
                "Bearer \(token)x", "Bearer " + String(repeating: "a", count: 513), "Béarer \(token)",
            ]
            for header in refused {
                let answer = try await plain.call(.get, "/api/v1/ctcsync", headers: [.authorization: header])
                #expect(answer.status == .unauthorized, "\(header)")
                #expect(answer.json?["code"] == .string("unauthorized"))
            }
        }
    }

    @Test("expired tokens stop working")
    func expiry() async throws {
        // The server's clock is the test's: the token's lifetime passes when the test sets the time, not in real time.
        let setTime = Mutex<Int64?>(nil)
        try await TestApp.run(
            .sqlite,
            configure: {
                $0.accounts.tokenLifetimeSeconds = 10
                $0.clock = { setTime.withLock { $0 } ?? WallClock.nowMs() }
            }
        ) { client in
            let asked = WallClock.nowMs()
            let api = try await APIClient.signedUp(client)
            let issued = WallClock.nowMs()
            // Issued between `asked` and `issued`: valid until at least `asked` + 10 s, expired from `issued` + 10 s.
            setTime.withLock { $0 = asked + 9_999 }
            #expect(try await api.call(.get, "/api/v1/ctcsync").status == .ok, "the token stopped before its 10 s lifetime")
            setTime.withLock { $0 = issued + 10_000 }
            #expect(try await api.call(.get, "/api/v1/ctcsync").status == .unauthorized)
        }
    }

    @Test("a login of an account added to the family reads the family's data", arguments: Backend.allCases)
    func extraAccount(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let alice = try await APIClient.signedUp(client)
            _ = try await alice.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Shared"}"#)
            #expect(try await alice.call(.post, "/api/v1/accounts", body: #"{"username":"bob","password":"password2"}"#).status == .created)
            let login = try await APIClient(client: client).call(.post, "/api/v1/login", body: #"{"username":"bob","password":"password2"}"#)
            let bob = APIClient(client: client, token: login.json?["token"]?.stringValue)
            let aliceLogin = try await APIClient(client: client).call(
                .post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#)
            #expect(login.json?["familyId"] == aliceLogin.json?["familyId"])
            let shared = try await bob.call(.get, "/api/v1/contacts/c1")
            #expect(shared.status == .ok)
            // Another family sees nothing of it, exactly as if it did not exist.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Other")
            let hidden = try await carol.call(.get, "/api/v1/contacts/c1")
            #expect(hidden.status == .notFound)
            let sync = try await carol.call(.get, "/api/v1/ctcsync")
            #expect(sync.json?["updated"] == .array([]))
        }
    }
}
