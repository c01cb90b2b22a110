import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// What an attacker tries first (issue 8), answered over HTTP on both backends: guessing passwords in parallel,
/// flooding the password hasher, hostile bytes, spelling tricks in groups, streams that never end.
@Suite("Hardening over HTTP", .sharingTheMachine)
struct HardeningHTTPTests {
    /// Router-level tests have no TCP peer: the test stands as a trusted proxy and names client addresses.
    static func proxied(_ configuration: inout AppConfiguration) {
        configuration.trustedProxies = ["local"]
    }

    static func login(_ api: APIClient, _ username: String, _ password: String, from address: String) async throws -> APIClient.Answer {
        try await api.call(
            .post, "/api/v1/login", body: #"{"username":"\#(username)","password":"\#(password)"}"#,
            headers: [HTTPField.Name("X-Forwarded-For")!: "203.0.113.9, \(address)"])
    }

    @Test("60 parallel wrong guesses: 10 are checked, 50 answer 429; another address still logs in", arguments: Backend.allCases)
    func parallelGuesses(backend: Backend) async throws {
        try await TestApp.run(
            backend,
            configure: {
                Self.proxied(&$0)
                $0.maxPendingHashes = 100  // every admitted guess is hashed: this test is about counting
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<60 {
                    group.addTask { try await Self.login(api, "alice", "wrong-guess", from: "10.0.0.1").status.code }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(statuses == [401: 10, 429: 50])
            let blocked = try await Self.login(api, "alice", "password1", from: "10.0.0.1")
            #expect(blocked.status == .tooManyRequests)
            #expect(Int(blocked.headers[.retryAfter] ?? "") ?? 0 > 0)
            // Refused attempts are not failures: 150 more from the same address (past the username's limit of 100
            // if they counted) leave the username open to every other address.
            var refused = 0
            for _ in 0..<150 where try await Self.login(api, "alice", "wrong-guess", from: "10.0.0.1").status == .tooManyRequests {
                refused += 1
            }
            #expect(refused == 150)
            print("parallel guesses (\(backend)): 60 in parallel → \(statuses), then \(refused) refused in a row from one address")
            #expect(try await Self.login(api, "alice", "password1", from: "10.0.0.2").status == .ok, "no lock-out by a stranger")
        }
    }

    @Test("password spraying: 30 failures from one address across usernames, then 429 for that address")
    func spraying() async throws {
        try await TestApp.run(.sqlite, configure: Self.proxied) { client in
            let api = try await APIClient.signedUp(client)
            for n in 0..<30 { #expect(try await Self.login(api, "user\(n)", "guess-guess", from: "10.0.0.3").status == .unauthorized) }
            #expect(try await Self.login(api, "alice", "password1", from: "10.0.0.3").status == .tooManyRequests)
            #expect(try await Self.login(api, "alice", "password1", from: "10.0.0.4").status == .ok)
        }
    }

    @Test("failures for one username from many addresses lock it for everyone, logged and counted in /metrics")
    func visibleAttack() async throws {
        try await TestApp.run(
            .sqlite,
            configure: {
                Self.proxied(&$0)
                $0.accounts.maxFailuresPerUsername = 6
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            for n in 0..<6 { #expect(try await Self.login(api, "alice", "guess-guess", from: "10.1.0.\(n)").status == .unauthorized) }
            #expect(try await Self.login(api, "alice", "password1", from: "10.2.0.1").status == .tooManyRequests)
            let metrics = try await api.call(.get, "/metrics").body
            #expect(metrics.contains("syncapi_login_username_locked_total 1"))
        }
    }

    @Test("POST /password: the account's other tokens stop at once, the caller's goes on; a wrong old password is 401", arguments: Backend.allCases)
    func passwordChange(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let other = try #require(
                try await api.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#).json?["token"]?.stringValue)
            let wrong = try await api.call(.post, "/api/v1/password", body: #"{"oldPassword":"nope-nope","newPassword":"another-one"}"#)
            #expect(wrong.status == .unauthorized)
            #expect(wrong.json?["code"] == .string("invalid_credentials"))
            let short = try await api.call(.post, "/api/v1/password", body: #"{"oldPassword":"password1","newPassword":"short"}"#)
            #expect(short.status == .badRequest && short.json?["field"] == .string("newPassword"))
            let changed = try await api.call(.post, "/api/v1/password", body: #"{"oldPassword":"password1","newPassword":"another-one"}"#)
            #expect(changed.status == .noContent)
            #expect(try await api.call(.get, "/api/v1/ctcsync").status == .ok)
            #expect(try await APIClient(client: client, token: other).call(.get, "/api/v1/ctcsync").status == .unauthorized)
            #expect(try await api.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#).status == .unauthorized)
            #expect(try await api.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"another-one"}"#).status == .ok)
        }
    }

    @Test("hashing is bounded: past the queue, 503 unavailable with Retry-After at once, never a queue")
    func boundedHashing() async throws {
        try await TestApp.run(
            .sqlite,
            configure: {
                Self.proxied(&$0)
                $0.maxPendingHashes = 1
                $0.bcryptCost = 10
            }
        ) { client in
            let api = APIClient(client: client)
            let answers = try await withThrowingTaskGroup(of: APIClient.Answer.self) { group in
                for n in 0..<8 { group.addTask { try await Self.login(api, "nobody\(n)", "guess-guess", from: "10.3.0.\(n)") } }
                return try await group.reduce(into: [APIClient.Answer]()) { $0.append($1) }
            }
            let busy = answers.filter { $0.status == .serviceUnavailable }
            #expect(!busy.isEmpty)
            #expect(busy.allSatisfy { $0.headers[.retryAfter] != nil && $0.json?["code"] == .string("unavailable") })
            #expect(answers.allSatisfy { $0.status == .unauthorized || $0.status == .serviceUnavailable })
        }
    }

    @Test("hostile input is a 400, never a 500", arguments: Backend.allCases)
    func hostileInput(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let anonymous = APIClient(client: client)
            let nul = #"\u0000"#
            for body in [
                #"{"family":"Smith","username":"al\#(nul)ice","password":"password1"}"#,
                #"{"family":"Sm\#(nul)ith","username":"alice","password":"password1"}"#,
                #"{"family":"Smith","username":"alice","password":"pass\#(nul)word1"}"#,
            ] {
                let answer = try await anonymous.call(.post, "/api/v1/signup", body: body)
                #expect(answer.status == .badRequest && answer.json?["code"] == .string("invalid_field"), "\(body)")
            }
            for username in ["al\(nul)ice", "a", "bad name"] {
                let answer = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"\#(username)","password":"password1"}"#)
                #expect(answer.status == .badRequest && answer.json?["field"] == .string("username"), "\(username)")
            }
            let api = try await APIClient.signedUp(client)
            let accents = "a" + String(repeating: "\u{301}", count: 100_000)
            let cases: [(String, String, String?)] = [
                ("/api/v1/contacts/c1", #"{"firstName":"\#(accents)"}"#, "firstName"),
                ("/api/v1/contacts/c1", #"{"firstName":"Bob","notes":"x\#(nul)y"}"#, "notes"),
                ("/api/v1/places/p1", #"{"name":"Home","latitude":9007199254740993}"#, nil),
                ("/api/v1/family", #"{"name":"Fam\#(nul)ily"}"#, "name"),
            ]
            for (path, body, field) in cases {
                let answer = try await api.call(.put, path, body: body)
                #expect(answer.status == .badRequest, "\(path) \(body.prefix(60))")
                if let field { #expect(answer.json?["field"] == .string(field)) }
            }
            // 2^53 + 1 parses to the same double as 2^53: refused when the body is read, before any field rule; a
            // safe integer in the same place reaches the field's range check.
            for huge in ["9007199254740993", "-9007199254740993", "9007199254740992"] {
                let answer = try await api.call(.put, "/api/v1/places/p1", body: #"{"name":"Home","latitude":\#(huge)}"#)
                #expect(answer.status == .badRequest && answer.json?["code"] == .string("invalid_json"), "\(huge)")
            }
            let safe = try await api.call(.put, "/api/v1/places/p1", body: #"{"name":"Home","latitude":9007199254740991}"#)
            #expect(safe.status == .badRequest && safe.json?["code"] == .string("invalid_field") && safe.json?["field"] == .string("latitude"))
            // U+0000 in every account string: login password, display names, a new password.
            let nulBodies: [(String, String, String)] = [
                ("/api/v1/login", #"{"username":"alice","password":"pass\#(nul)word1"}"#, "password"),
                ("/api/v1/accounts", #"{"username":"bob","password":"password2","displayName":"B\#(nul)ob"}"#, "displayName"),
                ("/api/v1/password", #"{"oldPassword":"password1","newPassword":"new\#(nul)password"}"#, "newPassword"),
            ]
            for (path, body, field) in nulBodies {
                let answer = try await api.call(.post, path, body: body)
                #expect(answer.status == .badRequest && answer.json?["code"] == .string("invalid_field"), "\(path)")
                #expect(answer.json?["field"] == .string(field), "\(path)")
            }
            // 256 combining accents on one letter are 257 scalars: over the limit although one grapheme.
            let long = try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"a\#(String(repeating: "\u{301}", count: 256))"}"#)
            #expect(long.status == .badRequest)
            let fits = try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"a\#(String(repeating: "\u{301}", count: 255))"}"#)
            #expect(fits.status == .ok)
        }
    }

    @Test("405 names the allowed methods in Allow; an empty If-Match is no precondition")
    func methodsAndPreconditions() async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            let post = try await api.call(.post, "/api/v1/contacts/c1")
            #expect(post.status == .methodNotAllowed)
            #expect(post.headers[.allow] == "DELETE, GET, HEAD, PATCH, PUT")
            #expect(try await api.call(.get, "/api/v1/group").headers[.allow] == "POST")
            #expect(try await api.call(.delete, "/api/v1/contacts/c9", headers: [.ifMatch: ""]).status == .noContent)
            #expect(try await api.call(.delete, "/api/v1/contacts/c9", headers: [.ifMatch: #""nope""#]).status == .preconditionFailed)
            // If-Match compares strongly (RFC 9110 §13.1.1; security audit L3): a weak tag of the same version never
            // matches; the strong tag does; If-None-Match compares weakly.
            let put = try await api.call(.put, "/api/v1/contacts/c8", body: #"{"firstName":"Tag"}"#)
            let etag = try #require(put.headers[.eTag])
            let weak = try await api.call(.put, "/api/v1/contacts/c8", body: #"{"firstName":"Weak"}"#, headers: [.ifMatch: "W/\(etag)"])
            #expect(weak.status == .preconditionFailed)
            #expect(try await api.call(.get, "/api/v1/contacts/c8", headers: [.ifNoneMatch: "W/\(etag)"]).status == .notModified)
            #expect(try await api.call(.delete, "/api/v1/contacts/c8", headers: [.ifMatch: "W/\(etag), \(etag)"]).status == .noContent)
            // Methods no route knows: 405 with Allow on a known path, 404 elsewhere (schemathesis finding).
            let query = try await api.call(HTTPRequest.Method("QUERY")!, "/api/v1/ctcsync")
            #expect(query.status == .methodNotAllowed && query.headers[.allow] == "GET, HEAD")
            #expect(try await api.call(HTTPRequest.Method("PROPFIND")!, "/api/v1/nowhere").status == .notFound)
            // Percent-encoded ids name the same item (schemathesis finding: clients encode ':').
            #expect(try await api.call(.put, "/api/v1/contacts/a%3Ab", body: #"{"firstName":"Colon"}"#).status == .ok)
            let decoded = try await api.call(.get, "/api/v1/contacts/a:b")
            #expect(decoded.status == .ok && decoded.json?["id"] == .string("a:b"))
            let head = try await api.call(.head, "/api/v1/ctcsync")
            #expect(head.status == .ok && head.body.isEmpty)
        }
    }

    @Test(
        "a group refuses every spelling of /group and /changes, and answers at once",
        arguments: [
            "/api/v1//changes", "/api/v1/./group", "/api/v1/group", "/api/v1//group/", "/api/v1/changes?date=x",
            "/api/v1/contacts/../changes", "/api/v1/./././changes", "/api/v1/../health", "/api/v1/../../x",
        ])
    func groupReach(url: String) async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            let start = ContinuousClock.now
            let answer = try await api.call(.post, "/api/v1/group", body: #"{"requests":[{"id":"x","method":"GET","url":"\#(url)"}]}"#)
            // At once: a refused sub-request does no work. 10.8 s was seen once with the whole test process stalled.
            #expect(ContinuousClock.now - start < .seconds(15))
            #expect(answer.status == .ok)
            guard case .array(let responses)? = answer.json?["responses"], let first = responses.first else {
                Issue.record("no responses: \(answer.body)")
                return
            }
            #expect(first["status"] == .number(400))
            #expect(first["body"]?["code"] == .string("invalid_subrequest"))
        }
    }

    @Test("a date above the counter answers sync: false on every sync endpoint", arguments: Backend.allCases)
    func dateAboveCounter(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Bob"}"#)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            let ahead = date.split(separator: ".").dropLast().joined(separator: ".") + ".999999"
            for endpoint in ["ctcsync", "evtsync", "plcsync", "msgsyncthread", "wallsync", "familysync"] {
                let answer = try await api.call(.get, "/api/v1/\(endpoint)?date=\(ahead)")
                #expect(answer.status == .ok, "\(endpoint)")
                #expect(answer.json?["sync"] == .bool(false), "\(endpoint)")
                #expect(answer.json?["date"] == .string(date), "\(endpoint)")
            }
        }
    }

    @Test("change streams: capped per account (429), and ended at once when the token stops working", arguments: Backend.allCases)
    func streamCapsAndRevocation(backend: Backend) async throws {
        try await TestApp.run(
            backend,
            configure: {
                ChangesHTTPTests.fast(&$0)
                $0.changesMaxDuration = .seconds(120)
                $0.maxStreamsPerAccount = 1
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            let start = ContinuousClock.now
            async let stream = api.call(.get, "/api/v1/changes")
            try await Self.waitForStreams(client, count: 1)
            let second = try await api.call(.get, "/api/v1/changes")
            #expect(second.status == .tooManyRequests && second.json?["code"] == .string("too_many_requests"))
            // HEAD does not open a stream (it would hold a slot forever): 405, GET only.
            let head = try await api.call(.head, "/api/v1/changes")
            #expect(head.status == .methodNotAllowed && head.headers[.allow] == "GET")
            #expect(try await api.call(.post, "/api/v1/logout").status == .noContent)
            let first = try await stream
            #expect(first.status == .ok)
            // Alone it ends in well under a second (11.9 s was seen under a loaded suite); 60 s still tells it from the
            // stream's own 120 s end.
            #expect(ContinuousClock.now - start < .seconds(60), "the stream ended with its token, not after 120 s")
            // A password change made with another token ends the streams of the account's other tokens too.
            let login = #"{"username":"alice","password":"password1"}"#
            let streaming = APIClient(client: client, token: try await api.call(.post, "/api/v1/login", body: login).json?["token"]?.stringValue)
            let changing = APIClient(client: client, token: try await api.call(.post, "/api/v1/login", body: login).json?["token"]?.stringValue)
            async let other = streaming.call(.get, "/api/v1/changes")
            try await Self.waitForStreams(client, count: 1)
            let changed = try await changing.call(
                .post, "/api/v1/password", body: #"{"oldPassword":"password1","newPassword":"another-one"}"#)
            let changedAt = ContinuousClock.now
            #expect(changed.status == .noContent)
            #expect(try await other.status == .ok)
            let took = ContinuousClock.now - changedAt
            #expect(took < .seconds(60), "the stream ended with the password change, not after 120 s")
            print("stream end after a password change (\(backend)): \(took)")
        }
    }

    @Test("change streams: capped per instance too (429 for another family's stream), a slot freed when a stream ends")
    func streamCapPerInstance() async throws {
        try await TestApp.run(
            .sqlite,
            configure: {
                ChangesHTTPTests.fast(&$0)
                $0.changesMaxDuration = .seconds(5)
                $0.maxStreamsPerInstance = 1
            }
        ) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            async let first = alice.call(.get, "/api/v1/changes")
            try await Self.waitForStreams(client, count: 1)
            let refused = try await bob.call(.get, "/api/v1/changes")
            #expect(refused.status == .tooManyRequests && refused.json?["code"] == .string("too_many_requests"))
            #expect(refused.headers[.retryAfter] != nil)
            #expect(try await first.status == .ok)
            // The first stream ended after its 5 s: its slot is free again.
            let next = try await bob.call(.get, "/api/v1/changes")
            #expect(next.status == .ok)
        }
    }
    /// Waits (up to 60 s) until the instance counts `count` open change streams (`syncapi_live_streams`): a stream
    /// requested by another task is then open, its slot taken.
    static func waitForStreams(_ client: any TestClientProtocol, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let metrics = try await APIClient(client: client).call(.get, "/metrics").body
            if metrics.split(separator: "\n").contains(where: { $0 == "syncapi_live_streams \(count)" || $0 == "syncapi_live_streams \(count).0" }) {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("\(count) open stream(s) never counted")
    }
}
