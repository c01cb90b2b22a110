import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import NIOCore
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// The security review's low findings on sign-in with identity providers (protocol §14), one test each, each failing
/// before its fix: L5 audiences, L6 encryption keys, L7 redirects, L8 the display-name claim, L9 keys without `alg`,
/// L10 `--disable-signup`.
@Suite("Identity sign-in: the security review's findings", .sharingTheMachine)
struct IdentityReviewTests {
    /// An app on `backend` trusting `idp` (named `idp0`) whose key set, in a file of the test's, is `jwks` (default: the
    /// provider's own), with the algorithms and audiences given (default: RS256 and ES256, its own audience).
    static func run(
        _ backend: Backend, _ idp: TestIdentityProvider, jwks: String? = nil, algorithms: [String] = ["RS256", "ES256"],
        audiences: [String]? = nil, configure: @escaping (inout AppConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let path = TestScratch.path("jwks-", suffix: ".json")
        try (jwks ?? idp.jwks()).write(toFile: path, atomically: true, encoding: .utf8)
        let identity = try IdentityProviders([
            idp.provider(name: "idp0", keySet: .file(path), algorithms: algorithms, audiences: audiences)
        ])
        try await TestApp.run(
            backend,
            configure: {
                $0.identity = identity
                configure(&$0)
            }, body)
    }

    /// Whether `answer` is 401 `invalid_credentials` naming `check`.
    static func refused(_ answer: APIClient.Answer, _ check: String) -> Bool {
        answer.status == .unauthorized && answer.json?["code"] == .string("invalid_credentials")
            && answer.json?["detail"]?.stringValue?.contains("(\(check))") == true
    }

    @Test("L5: every aud must be one of the provider's audiences, and with several an azp must be one of them too")
    func audiences() async throws {
        let idp = try TestIdentityProvider()
        let widget = "com.example.widget"
        try await Self.run(.sqlite, idp, audiences: [idp.audience, widget]) { client in
            func exchange(aud: [String], azp: String? = nil) async throws -> APIClient.Answer {
                var claims = idp.claims()
                if aud.count == 1 { claims["aud"] = aud[0] } else { claims["aud"] = aud }
                if let azp { claims["azp"] = azp }
                return try await TokenHTTPTests.exchange(client, try idp.token(claims))
            }
            // Measured in the review: 200.
            let extra = try await exchange(aud: ["evil-app", idp.audience])
            #expect(Self.refused(extra, "audience"), "\(extra.status) \(extra.body)")
            let presenter = try await exchange(aud: [idp.audience, widget], azp: "evil-app")
            #expect(Self.refused(presenter, "audience"), "\(presenter.status) \(presenter.body)")
            // Still accepted: several audiences all trusted (presented by one of them, or with no azp), and one audience
            // presented by another client (Google's server client id with an Android client's azp).
            #expect(try await exchange(aud: [idp.audience, widget], azp: widget).status == .ok)
            #expect(try await exchange(aud: [widget, idp.audience]).status == .ok)
            #expect(try await exchange(aud: [idp.audience], azp: "android-client").status == .ok)
        }
    }

    @Test("L6: keys for another use (use other than sig, key_ops without verify) verify nothing")
    func encryptionKeys() async throws {
        let idp = try TestIdentityProvider()
        let jwks = TestIdentityProvider.jwks([
            try idp.jwk(.rsa, kid: "rsa-enc", use: "enc"),
            try idp.jwk(.rsa, kid: "rsa-encrypt", use: nil, keyOps: ["encrypt"]),
            try idp.jwk(.rsa, kid: "rsa-verify", use: nil, keyOps: ["verify"]),
            try idp.jwk(.ec),
        ])
        try await Self.run(.sqlite, idp, jwks: jwks) { client in
            // Measured in the review: 200 for the `"use":"enc"` key.
            for kid in ["rsa-enc", "rsa-encrypt"] {
                let answer = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), kid: .some(kid)))
                #expect(Self.refused(answer, "unknown key"), "\(kid): \(answer.status) \(answer.body)")
            }
            // The same key listed for verifying, and the set's other key, still verify.
            #expect(try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), kid: .some("rsa-verify"))).status == .ok)
            #expect(try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), signedWith: .ec)).status == .ok)
        }
    }

    @Test("L7: a key set URL answering a redirect is not followed; max-age is capped at 24 h")
    func redirects() async throws {
        let idp = try TestIdentityProvider()
        let server = RedirectingKeySetServer(jwks: try idp.jwks())
        try await server.serving { base in
            // The set behind the redirect verifies the token when it is configured itself: the refusal below is the
            // redirect's.
            let direct = IdentityVerifier(providers: try IdentityProviders([idp.provider(keySet: .url(base + "/moved"))]))
            #expect(await IdentityVerifierTests.outcome(direct, try idp.token(idp.claims())) == "accepted")
            #expect(server.movedReads == 1)
            // Measured in the review: followed, and 200.
            let redirected = IdentityVerifier(providers: try IdentityProviders([idp.provider(keySet: .url(base + "/jwks"))]))
            #expect(await IdentityVerifierTests.outcome(redirected, try idp.token(idp.claims())) == "unknown key")
            #expect(server.redirects == 1 && server.movedReads == 1, "the redirect's target was read")
            #expect(await redirected.cache(named: "test")?.failures == 1)
        }
        #expect(KeySetCache.freshness(.seconds(30 * 86_400)) == .seconds(86_400))
        #expect(KeySetCache.freshness(.seconds(600)) == .seconds(600))
        #expect(KeySetCache.freshness(nil) == .seconds(3600))
    }

    @Test("L8: the display-name claim is cut at 256 scalars, without control characters, else the provider's name", arguments: Backend.allCases)
    func displayNames(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(backend, idp) { client in
            // The display name the account of `subject` is made with when its token's name claim is `name`.
            func stored(_ subject: String, _ name: String) async throws -> String? {
                var claims = idp.claims(subject: subject)
                claims["name"] = name
                let answer = try await TokenHTTPTests.exchange(client, try idp.token(claims), space: "Home")
                guard answer.status == .ok, let token = answer.json?["token"]?.stringValue else {
                    throw TestFailure("exchange: \(answer.status) \(answer.body)")
                }
                let api = APIClient(client: client, token: token)
                let space = try #require(SpacesHTTPTests.array(try await api.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
                return SpacesHTTPTests.array(try await api.call(.get, "/api/v1/spaces/\(space)/members")).first?["displayName"]?.stringValue
            }
            // Measured in the review: 1,501 scalars stored (one grapheme cluster).
            let marks = try #require(try await stored("marks", "a" + String(repeating: "\u{301}", count: 1500)))
            #expect(marks.unicodeScalars.count == Limits.nameLength && marks.unicodeScalars.first == "a", "\(marks.unicodeScalars.count)")
            // Measured in the review: stored with U+0000 on SQLite; 400 on every exchange on PostgreSQL.
            #expect(try await stored("nul", "ev\u{0}il\u{7}") == "evil")
            // Nothing left: the provider's name.
            #expect(try await stored("controls", "\u{0}\u{1B}\u{7F}") == "idp0")
            #expect(try await stored("plain", "Ann Example") == "Ann Example")
        }
    }

    @Test("L9: a key without alg verifies the header's algorithm of its type, and a forged token cannot pin it to another")
    func keysWithoutAlgorithm() async throws {
        let idp = try TestIdentityProvider()
        let jwks = TestIdentityProvider.jwks([try idp.jwk(.rsa, alg: .some(nil), use: nil), try idp.jwk(.ec)])
        try await Self.run(.sqlite, idp, jwks: jwks, algorithms: ["RS256", "PS256"]) { client in
            // First, before any genuine token: PS256 in the header over an RS256 signature (a bad PS256 signature). With
            // JWTKit's signer cached per key, this would fix the key to PS256 and refuse every RS256 token after it.
            let forged = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), alg: "PS256"))
            #expect(Self.refused(forged, "signature"), "\(forged.status) \(forged.body)")
            // Measured in the review: 401 "(unknown key)".
            let genuine = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims()))
            #expect(genuine.status == .ok, "\(genuine.body)")
            // The key verifies each algorithm of the provider's list that fits it, one after the other.
            let pss = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), signedWith: .rsaPSS))
            #expect(pss.status == .ok, "\(pss.body)")
            #expect(try await TokenHTTPTests.exchange(client, try idp.token(idp.claims())).status == .ok)
            // An algorithm the provider does not list stays refused, whatever the key.
            let listed = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(), alg: "RS512"))
            #expect(Self.refused(listed, "algorithm"), "\(listed.status) \(listed.body)")
        }
    }

    @Test("L10: with --disable-signup a new identity is refused 403 signup_disabled; an existing one still signs in", arguments: Backend.allCases)
    func signupDisabled(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        let database = try await backend.freshDatabaseURL()
        // Ann's account is made while signup is on.
        try await Self.run(backend, idp, configure: { $0.database = database }) { client in
            let made = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(subject: "ann")), space: "Smith")
            #expect(made.status == .ok && made.json?["created"] == .bool(true), "\(made.body)")
        }
        // The same database, signup off.
        try await Self.run(
            backend, idp,
            configure: {
                $0.database = database
                $0.accounts.signupEnabled = false
            }
        ) { client in
            // Measured in the review: 200 `created: true`, with an owned space.
            let stranger = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(subject: "stranger")), space: "Mine")
            #expect(stranger.status == .forbidden && stranger.json?["code"] == .string("signup_disabled"), "\(stranger.body)")
            let ann = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(subject: "ann")))
            #expect(ann.status == .ok && ann.json?["created"] == .bool(false), "\(ann.body)")
            // The refused stranger made nothing: refused again.
            let again = try await TokenHTTPTests.exchange(client, try idp.token(idp.claims(subject: "stranger")))
            #expect(again.status == .forbidden, "\(again.body)")
        }
    }
}

/// A provider's key set URL that answers with a redirect (`/jwks`: 302 to `/moved`, an absolute URL) and the set itself
/// at the target (`/moved`), on loopback HTTP, counting each.
final class RedirectingKeySetServer: Sendable {
    private let jwks: String
    private let boundPort = Atomic<Int>(0)
    private let redirectCount = Atomic<Int>(0)
    private let movedCount = Atomic<Int>(0)

    init(jwks: String) { self.jwks = jwks }

    /// Times `/jwks` answered its redirect.
    var redirects: Int { redirectCount.load(ordering: .relaxed) }
    /// Times the set at `/moved` was read.
    var movedReads: Int { movedCount.load(ordering: .relaxed) }

    /// Serves both paths at `http://127.0.0.1:PORT` while `body` runs with that base URL.
    func serving<T: Sendable>(_ body: @Sendable (_ base: String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("jwks") { _, _ in
            self.redirectCount.add(1, ordering: .relaxed)
            let target = "http://127.0.0.1:\(self.boundPort.load(ordering: .relaxed))/moved"
            return Response(status: .found, headers: [.location: target], body: ResponseBody(byteBuffer: ByteBuffer()))
        }
        router.get("moved") { _, _ in
            self.movedCount.add(1, ordering: .relaxed)
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=3600"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: self.jwks)))
        }
        return try await LoopbackServer.serving(router) { bound, _ in
            boundPort.store(bound, ordering: .relaxed)
            return try await body("http://127.0.0.1:\(bound)")
        }
    }
}
