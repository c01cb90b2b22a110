import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Protocol §14 over HTTP: `POST /api/v1/token` exchanges a provider's ID token for a SyncAPI token, the account being
/// the identity (`iss`, `sub`), on both backends.
@Suite("Sign-in with an identity provider", .sharingTheMachine)
struct TokenHTTPTests {
    /// An app trusting `providers` (each with its key set in a file of the test's, named `idp0`, `idp1`…).
    static func run(
        _ backend: Backend, _ providers: [TestIdentityProvider], _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await run(backend, providers, configure: { _ in }, body)
    }

    /// `run` with a configuration of the test's on top.
    static func run(
        _ backend: Backend, _ providers: [TestIdentityProvider], configure: @escaping (inout AppConfiguration) -> Void,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        var configured: [IdentityProvider] = []
        for (index, idp) in providers.enumerated() {
            let path = TestScratch.path("jwks-", suffix: ".json")
            try idp.jwks().write(toFile: path, atomically: true, encoding: .utf8)
            configured.append(idp.provider(name: "idp\(index)", keySet: .file(path)))
        }
        let identity = try IdentityProviders(configured)
        try await TestApp.run(
            backend,
            configure: {
                $0.identity = identity
                configure(&$0)
            }, body)
    }

    /// An app on SQLite trusting `idp` (named `idp0`) with its key set served over loopback HTTP by `server`; `body`
    /// gets the app's client and the server's `stop`.
    static func run(
        _ idp: TestIdentityProvider, servedBy server: KeySetServer, configure: @escaping @Sendable (inout AppConfiguration) -> Void,
        _ body: @escaping @Sendable (any TestClientProtocol, _ stop: @escaping @Sendable () async -> Void) async throws -> Void
    ) async throws {
        try await server.serving { url, stop in
            let identity = try IdentityProviders([idp.provider(name: "idp0", keySet: .url(url))])
            try await TestApp.run(
                .sqlite,
                configure: {
                    $0.identity = identity
                    configure(&$0)
                }
            ) { client in try await body(client, stop) }
        }
    }

    static func exchange(_ client: any TestClientProtocol, _ token: String, space: String? = nil) async throws -> APIClient.Answer {
        let body = space.map { #"{"idToken":"\#(token)","space":"\#($0)"}"# } ?? #"{"idToken":"\#(token)"}"#
        return try await APIClient(client: client).call(.post, "/api/v1/token", body: body)
    }

    @Test(
        "a first exchange makes the account (with a home space when named), later ones sign it in; two issuers, two accounts",
        arguments: Backend.allCases)
    func exchanges(backend: Backend) async throws {
        let apple = try TestIdentityProvider(issuer: "https://appleid.example")
        let google = try TestIdentityProvider(issuer: "https://accounts.google.example")
        try await Self.run(backend, [apple, google]) { client in
            let first = try await Self.exchange(client, try apple.token(apple.claims(subject: "001")), space: "Smith")
            #expect(first.status == .ok && first.json?["created"] == .bool(true), "\(first.body)")
            let accountID = try #require(first.json?["accountId"]?.stringValue)
            guard case .array(let spaces)? = first.json?["spaces"] else { throw TestFailure("no spaces: \(first.body)") }
            #expect(spaces.count == 1 && spaces.first?["name"] == .string("Smith") && spaces.first?["role"] == .string("owner"))
            let ann = APIClient(client: client, token: try #require(first.json?["token"]?.stringValue))
            #expect(try await ann.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            let space = try #require(spaces.first?["id"]?.stringValue)
            let members = SpacesHTTPTests.array(try await ann.call(.get, "/api/v1/spaces/\(space)/members"))
            #expect(members.first?["displayName"] == .string("Ann Example"), "the provider's name claim")

            // The same identity again: the same account, nothing made.
            let again = try await Self.exchange(client, try apple.token(apple.claims(subject: "001"), signedWith: .ec), space: "Ignored")
            #expect(again.json?["created"] == .bool(false) && again.json?["accountId"] == .string(accountID), "\(again.body)")
            #expect(SpacesHTTPTests.array(try await ann.call(.get, "/api/v1/spaces")).count == 1)
            // The same subject from another issuer: another account.
            let other = try await Self.exchange(client, try google.token(google.claims(subject: "001")))
            #expect(other.json?["created"] == .bool(true) && other.json?["accountId"] != .string(accountID), "\(other.body)")
            // Without a space it belongs to none: its unprefixed paths answer 404 until it joins one by invitation.
            guard case .array(let none)? = other.json?["spaces"] else { throw TestFailure("no spaces: \(other.body)") }
            #expect(none.isEmpty)
            let ben = APIClient(client: client, token: try #require(other.json?["token"]?.stringValue))
            #expect(try await ben.call(.get, "/api/v1/ctcsync").status == .notFound)
            #expect(try await SpacesHTTPTests.accept(ben, try await SpacesHTTPTests.invite(ann, space, role: "reader")).status == .ok)
            let read = try await ben.call(.get, "/api/v1/ctcsync")
            #expect(read.status == .ok && SpacesHTTPTests.ids(read.json?["updated"]) == ["c1"], "\(read.body)")
            // Its token behaves like a login's: logout ends it at once.
            #expect(try await ben.call(.post, "/api/v1/logout").status == .noContent)
            #expect(try await ben.call(.get, "/api/v1/ctcsync").status == .unauthorized)
            // Identity accounts have no password: their username cannot be typed, and login refuses it.
            let login = try await APIClient(client: client).call(
                .post, "/api/v1/login", body: #"{"username":"~\#(accountID)","password":"anything!"}"#)
            #expect(login.status == .badRequest || login.status == .unauthorized)
        }
    }

    @Test("refused tokens answer 401 invalid_credentials naming the check, count against the address, and never 5xx", arguments: Backend.allCases)
    func refusals(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(backend, [idp]) { client in
            let expired = try await Self.exchange(client, try idp.token(idp.claims(now: Date().timeIntervalSince1970 - 3600)))
            #expect(expired.status == .unauthorized && expired.json?["code"] == .string("invalid_credentials"))
            #expect(expired.json?["detail"]?.stringValue?.contains("(expired)") == true, "\(expired.body)")
            #expect(expired.headers[.contentType] == "application/problem+json")
            for body in [#"{}"#, #"{"idToken": 5}"#, #"{"idToken": "x", "space": ""}"#, "[]", "not json"] {
                let answer = try await APIClient(client: client).call(.post, "/api/v1/token", body: body)
                #expect(answer.status == .badRequest, "\(body): \(answer.status) \(answer.body)")
            }
            // A group never exchanges (POST is not a sub-request's method).
            let api = try await APIClient.signedUp(client)
            let group = try await api.call(
                .post, "/api/v1/group", body: #"{"requests":[{"id":"t","method":"POST","url":"/api/v1/token","body":{"idToken":"x"}}]}"#)
            #expect(SpacesHTTPTests.statuses(group) == [.number(400)], "\(group.body)")
            // Exchanges are admitted per address like logins, and failed ones count against it like failed logins (the
            // ones above included): within 30, 429, even for a good token.
            var statuses: [HTTPResponse.Status] = []
            while statuses.last != .tooManyRequests, statuses.count < 40 {
                statuses.append(try await Self.exchange(client, "garbage.token.here").status)
            }
            #expect(statuses.dropLast().allSatisfy { $0 == .unauthorized } && statuses.last == .tooManyRequests, "\(statuses)")
            #expect(statuses.count <= 30)
            #expect(try await Self.exchange(client, try idp.token(idp.claims())).status == .tooManyRequests)
        }
    }

    @Test(
        "--disable-passwords: signup, login, password changes and password accounts answer 403; the description says so", arguments: Backend.allCases)
    func passwordsOff(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(backend, [idp], configure: { $0.accounts.passwordsEnabled = false }) { client in
            let anonymous = APIClient(client: client)
            let signup = try await anonymous.call(
                .post, "/api/v1/signup", body: #"{"family":"Smith","username":"alice","password":"password1"}"#)
            #expect(signup.status == .forbidden && signup.json?["code"] == .string("signup_disabled"), "\(signup.body)")
            let login = try await anonymous.call(.post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#)
            #expect(login.status == .forbidden && login.json?["code"] == .string("signup_disabled"), "\(login.body)")
            let first = try await Self.exchange(client, try idp.token(idp.claims()), space: "Smith")
            let ann = APIClient(client: client, token: try #require(first.json?["token"]?.stringValue))
            let added = try await ann.call(.post, "/api/v1/accounts", body: #"{"username":"bob","password":"password1"}"#)
            #expect(added.status == .forbidden && added.json?["code"] == .string("signup_disabled"), "\(added.body)")
            let password = try await ann.call(.post, "/api/v1/password", body: #"{"oldPassword":"x","newPassword":"password2"}"#)
            #expect(password.status == .forbidden, "\(password.body)")
            let description = try await anonymous.call(.get, "/api/v1/")
            #expect(description.json?["usernameLogin"] == .bool(false) && description.json?["signup"] == .bool(false))
            #expect(description.json?["identityProviders"] == .array([.string("idp0")]))
        }
    }

    @Test(
        "an identity account deletes itself, with a space or none; the next exchange of the same identity makes a new account",
        arguments: Backend.allCases)
    func deletion(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(backend, [idp]) { client in
            func signIn(_ subject: String, space: String? = nil) async throws -> (api: APIClient, id: String, created: Bool) {
                let answer = try await Self.exchange(client, try idp.token(idp.claims(subject: subject)), space: space)
                guard answer.status == .ok, let token = answer.json?["token"]?.stringValue, let id = answer.json?["accountId"]?.stringValue else {
                    throw TestFailure("exchange: \(answer.status) \(answer.body)")
                }
                return (APIClient(client: client, token: token), id, answer.json?["created"] == .bool(true))
            }
            // In no space: its unprefixed paths address nothing, yet it deletes itself.
            let ben = try await signIn("ben")
            #expect(try await ben.api.call(.delete, "/api/v1/accounts/someone-else").status == .notFound)
            let deleted = try await ben.api.call(.delete, "/api/v1/accounts/\(ben.id)")
            #expect(deleted.status == .noContent, "\(deleted.body)")
            #expect(try await ben.api.call(.get, "/api/v1/spaces").status == .unauthorized)
            let reborn = try await signIn("ben")
            #expect(reborn.created && reborn.id != ben.id)

            // The owner of a space with a member made elsewhere: 409 last_owner until the member has gone.
            let ann = try await signIn("ann", space: "Smith")
            let space = try #require(SpacesHTTPTests.array(try await ann.api.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            #expect(try await SpacesHTTPTests.accept(reborn.api, try await SpacesHTTPTests.invite(ann.api, space, role: "member")).status == .ok)
            let stranded = try await ann.api.call(.delete, "/api/v1/accounts/\(ann.id)")
            #expect(stranded.status == .conflict && stranded.json?["code"] == .string("last_owner"), "\(stranded.body)")
            // Ben, a member of Ann's space (now his home), deletes himself: the account made in a space of its own.
            #expect(try await reborn.api.call(.delete, "/api/v1/accounts/\(reborn.id)").status == .noContent)
            #expect(SpacesHTTPTests.array(try await ann.api.call(.get, "/api/v1/spaces/\(space)/members")).count == 1)
            // Alone in her space, Ann deletes herself; her identity then makes a new account.
            let gone = try await ann.api.call(.delete, "/api/v1/accounts/\(ann.id)")
            #expect(gone.status == .noContent, "\(gone.body)")
            #expect(try await ann.api.call(.get, "/api/v1/ctcsync").status == .unauthorized)
            let again = try await signIn("ann")
            #expect(again.created && again.id != ann.id)
        }
    }

    @Test(
        "a key set served over loopback HTTP: read on first use, read again on a rotation, kept when the provider is unreachable; counted in /metrics"
    )
    func keySetOverHTTP() async throws {
        let idp = try TestIdentityProvider()
        let server = KeySetServer(jwks: try idp.jwks())
        try await Self.run(idp, servedBy: server, configure: { $0.keySetMinimumRefresh = .zero }) { client, stop in
            let ann = try await APIClient.signedUp(client, username: "ann", family: "Smith")
            #expect(try await Self.exchange(client, try idp.token(idp.claims(subject: "1"))).status == .ok)
            #expect(server.fetches == 1)
            // The provider rotates: the new key's first token reads the set again; the old key is gone with it.
            let next = try idp.rotated(rsaKid: "rsa-2")
            server.publish(try next.jwks())
            #expect(try await Self.exchange(client, try next.token(next.claims(subject: "2"))).status == .ok)
            #expect(server.fetches == 2)
            // The provider becomes unreachable: the keys held still verify (the set is fresh: no read at all), an
            // unknown key id tries a read that fails and answers 401, and the held keys still verify after it.
            await stop()
            #expect(try await Self.exchange(client, try next.token(next.claims(subject: "2"))).status == .ok)
            let unknown = try await Self.exchange(client, try next.token(next.claims(subject: "3"), kid: .some("rsa-3")))
            #expect(unknown.status == .unauthorized && unknown.json?["detail"]?.stringValue?.contains("(unknown key)") == true)
            #expect(try await Self.exchange(client, try next.token(next.claims(subject: "4"), signedWith: .ec)).status == .ok)
            // Other calls go on as before.
            #expect(try await ann.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            #expect(try await ann.call(.get, "/api/v1/ctcsync").status == .ok)
            // What an operator sees.
            let metrics = try await APIClient(client: client).call(.get, "/metrics").body
            for line in [
                #"syncapi_identity_tokens_total{provider="idp0",outcome="verified"} 4"#,
                #"syncapi_identity_tokens_total{provider="idp0",outcome="unknown_key"} 1"#,
                #"syncapi_identity_key_set_reads_total{provider="idp0",result="ok"} 2"#,
                #"syncapi_identity_key_set_reads_total{provider="idp0",result="failed"} 1"#,
            ] {
                #expect(metrics.contains(line), "\(line) in \(metrics.split(separator: "\n").filter { $0.contains("identity") })")
            }
        }
    }

    @Test(
        "10,000 hostile exchanges from 500 addresses (garbage, unknown key ids): the provider's key set is fetched once, another family syncs throughout"
    )
    func hostileExchanges() async throws {
        let idp = try TestIdentityProvider()
        let server = KeySetServer(jwks: try idp.jwks())
        // The key set may be read again once per refresh interval: an hour here, so that a loaded machine's slow run
        // (minutes) stays inside one interval and exactly one read is allowed.
        try await Self.run(
            idp, servedBy: server,
            configure: {
                HardeningHTTPTests.proxied(&$0)
                $0.keySetMinimumRefresh = .seconds(3600)
            }
        ) { client, _ in
            let family = try await APIClient.signedUp(client, username: "bystander", family: "Bystanders")
            #expect(try await family.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Still here"}"#).status == .ok)
            let claims = idp.claims()
            // Minted once: an RS256 signature per token would make this test about RSA's speed.
            let forged = try (0..<32).map { try idp.token(claims, kid: .some("forged-\($0)")) }
            // Each task answers (is it the bystander's syncs, statuses counted).
            let (statuses, syncs) = try await withThrowingTaskGroup(of: (Bool, [Int: Int]).self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        let api = APIClient(client: client)
                        var counted: [Int: Int] = [:]
                        for n in 0..<1_250 {
                            let address = "198.18.\(worker).\(n % 63)"
                            let token = n % 2 == 0 ? forged[(n + worker) % forged.count] : "garbage.\(worker)-\(n).x"
                            let answer = try await api.call(
                                .post, "/api/v1/token", body: #"{"idToken":"\#(token)"}"#,
                                headers: [HTTPField.Name("X-Forwarded-For")!: address])
                            counted[Int(answer.status.code), default: 0] += 1
                        }
                        return (false, counted)
                    }
                }
                // Another family's syncs go on while the flood lasts.
                group.addTask {
                    var counted: [Int: Int] = [:]
                    for _ in 0..<100 { counted[Int(try await family.call(.get, "/api/v1/ctcsync").status.code), default: 0] += 1 }
                    return (true, counted)
                }
                var exchanges: [Int: Int] = [:]
                var syncs: [Int: Int] = [:]
                for try await (bystander, counted) in group {
                    if bystander { syncs = counted } else { exchanges.merge(counted, uniquingKeysWith: +) }
                }
                return (exchanges, syncs)
            }
            print("hostile exchanges: \(statuses.sorted { $0.key < $1.key }), key set fetched \(server.fetches) time(s)")
            #expect(statuses.values.reduce(0, +) == 10_000 && Set(statuses.keys).isSubset(of: [401, 429]), "\(statuses)")
            #expect(server.fetches == 1)
            #expect(syncs == [200: 100])
            // A real token from a fresh address still signs in.
            let good = try await APIClient(client: client).call(
                .post, "/api/v1/token", body: #"{"idToken":"\#(try idp.token(idp.claims()))"}"#,
                headers: [HTTPField.Name("X-Forwarded-For")!: "192.0.2.77"])
            #expect(good.status == .ok, "\(good.body)")
        }
    }

    @Test("a server that trusts no provider refuses every exchange with 401")
    func noProviders() async throws {
        let idp = try TestIdentityProvider()
        try await TestApp.run(.sqlite) { client in
            let answer = try await Self.exchange(client, try idp.token(idp.claims()))
            #expect(answer.status == .unauthorized && answer.json?["detail"]?.stringValue?.contains("(issuer)") == true, "\(answer.body)")
        }
    }
}
