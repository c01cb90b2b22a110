import Foundation
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Protocol §14's checks of an ID token, each refusal naming its check; key sets read from a file, read again on a
/// rotation, and never more than once per 30 s whatever tokens arrive.
@Suite("ID token verification")
struct IdentityVerifierTests {
    /// A provider whose key set is a file of the test's.
    static func verifier(_ idp: TestIdentityProvider, minimumRefresh: Duration = .seconds(30)) throws -> (IdentityVerifier, String) {
        let path = TestScratch.path("jwks-", suffix: ".json")
        try idp.jwks().write(toFile: path, atomically: true, encoding: .utf8)
        let providers = try IdentityProviders([idp.provider(keySet: .file(path))])
        return (IdentityVerifier(providers: providers, minimumRefresh: minimumRefresh), path)
    }

    /// The check a refusal names (`ID token refused (check): …`), or "accepted".
    static func outcome(_ verifier: IdentityVerifier, _ token: String) async -> String {
        do {
            _ = try await verifier.verify(token)
            return "accepted"
        } catch let error as SyncError {
            guard error.code == .invalidCredentials, let open = error.detail.firstIndex(of: "("),
                let close = error.detail.firstIndex(of: ")")
            else { return "other: \(error)" }
            return String(error.detail[error.detail.index(after: open)..<close])
        } catch {
            return "not a SyncError: \(error)"
        }
    }

    @Test("tokens signed with RS256 and ES256 verify, giving (iss, sub) and the display-name claim")
    func accepted() async throws {
        let idp = try TestIdentityProvider()
        let (verifier, _) = try Self.verifier(idp)
        let identity = try await verifier.verify(try idp.token(idp.claims()))
        #expect(identity == VerifiedIdentity(provider: "test", issuer: idp.issuer, subject: "user-1", displayName: "Ann Example"))
        #expect(try await verifier.verify(try idp.token(idp.claims(subject: "user-2"), signedWith: .ec)).subject == "user-2")
        // `aud` as an array naming only the app; an untrusted extra audience is refused (security review L5).
        var claims = idp.claims()
        claims["aud"] = [idp.audience]
        #expect(await Self.outcome(verifier, try idp.token(claims)) == "accepted")
        claims["aud"] = ["another.app", idp.audience]
        #expect(await Self.outcome(verifier, try idp.token(claims)) == "audience")
        // 60 s of leeway on each time.
        let now = Date().timeIntervalSince1970
        claims = idp.claims()
        claims["exp"] = Int(now) - 30
        claims["nbf"] = Int(now) + 30
        #expect(await Self.outcome(verifier, try idp.token(claims)) == "accepted")
    }

    @Test("every refusal is 401 invalid_credentials naming its check, never anything else")
    func refusals() async throws {
        let idp = try TestIdentityProvider()
        let (verifier, _) = try Self.verifier(idp)
        let now = Date().timeIntervalSince1970
        func with(_ key: String, _ value: Any?) -> [String: Any] {
            var claims = idp.claims(now: now)
            claims[key] = value
            return claims
        }
        let valid = try idp.token(idp.claims())
        let parts = valid.split(separator: ".").map(String.init)
        let otherIssuer = try TestIdentityProvider(issuer: "https://evil.example")
        let cases: [(String, String)] = [
            ("", "malformed"), ("garbage", "malformed"), ("a.b", "malformed"), ("a.b.c", "malformed"),
            (parts[0] + "." + parts[1] + ".", "signature"), ("!!!." + parts[1] + "." + parts[2], "malformed"),
            (String(repeating: "a", count: 20_000), "malformed"),
            (try idp.token(with("iss", "https://evil.example")), "issuer"),
            (try otherIssuer.token(otherIssuer.claims()), "issuer"),
            (try idp.token(idp.claims(), signedWith: .none), "algorithm"),
            (try idp.token(idp.claims(), signedWith: .hmac), "algorithm"),
            (try idp.token(idp.claims(), alg: "PS256"), "algorithm"),
            // An RS256 key named by a token that says ES256.
            (try idp.token(idp.claims(), signedWith: .ec, kid: .some(idp.rsaKid)), "algorithm"),
            (try idp.token(idp.claims(), kid: .some(nil)), "unknown key"),
            (try idp.token(idp.claims(), kid: "nobody"), "unknown key"),
            // Signed by another key of the same kid.
            (try TestIdentityProvider().token(idp.claims()), "signature"),
            (
                parts[0] + "." + TestIdentityProvider.base64URL(try JSONSerialization.data(withJSONObject: with("sub", "admin"))) + "." + parts[2],
                "signature"
            ),
            (try idp.token(with("aud", "another.app")), "audience"),
            (try idp.token(with("aud", ["a", "b"])), "audience"),
            (try idp.token(with("aud", nil)), "audience"),
            (try idp.token(with("exp", Int(now) - 61)), "expired"),
            (try idp.token(with("exp", nil)), "expired"),
            (try idp.token(with("nbf", Int(now) + 120)), "not yet valid"),
            (try idp.token(with("iat", Int(now) + 120)), "not yet valid"),
            (try idp.token(with("iat", "yesterday")), "malformed"),
            (try idp.token(with("sub", nil)), "subject"),
            (try idp.token(with("sub", "")), "subject"),
            (try idp.token(with("sub", String(repeating: "s", count: 300))), "subject"),
        ]
        for (index, (token, check)) in cases.enumerated() {
            #expect(await Self.outcome(verifier, token) == check, "case \(index)")
        }
    }

    @Test("a rotated key set is read again on the new key's first token, without a restart")
    func rotation() async throws {
        let idp = try TestIdentityProvider()
        let (verifier, path) = try Self.verifier(idp, minimumRefresh: .zero)
        #expect(await Self.outcome(verifier, try idp.token(idp.claims())) == "accepted")
        let next = try idp.rotated(rsaKid: "rsa-2")
        try next.jwks().write(toFile: path, atomically: true, encoding: .utf8)
        #expect(await Self.outcome(verifier, try next.token(next.claims())) == "accepted")
        // The old key left the set: its tokens no longer verify once the set is read again.
        #expect(await Self.outcome(verifier, try idp.token(idp.claims())) == "unknown key")
    }

    @Test("10,000 tokens with unknown key ids and garbage read the key set once, and the known key still verifies")
    func throttled() async throws {
        let idp = try TestIdentityProvider()
        let (verifier, _) = try Self.verifier(idp)
        let claims = idp.claims()
        // Minted once: an RS256 signature per token would make this test about RSA's speed.
        let unknown = try (0..<16).map { try idp.token(claims, kid: .some("forged-\($0)")) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for n in 0..<2_500 {
                        let token = n % 2 == 0 ? unknown[(n + worker) % unknown.count] : "garbage.\(n).x"
                        #expect(await Self.outcome(verifier, token) != "accepted")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await verifier.cache(named: "test")?.reads == 1)
        #expect(await Self.outcome(verifier, try idp.token(claims)) == "accepted")
    }

    @Test("the identity file: providers checked at start, mistakes named")
    func configuration() throws {
        let good = #"""
            {"providers": [{"name": "apple", "issuer": "https://appleid.apple.com", "audiences": ["com.example.family"],
              "jwks": "https://appleid.apple.com/auth/keys", "algorithms": ["RS256", "ES256"], "displayName": "name"},
             {"name": "local", "issuer": "http://127.0.0.1:9000", "audiences": ["app"], "jwks": "file:/etc/syncapi/keys.json"}]}
            """#
        let providers = try IdentityProviders(json: Array(good.utf8))
        #expect(providers.providers.map(\.name) == ["apple", "local"])
        #expect(providers.providers[1].keySet == .file("/etc/syncapi/keys.json") && providers.providers[1].algorithms == ["RS256", "ES256"])
        let bad: [(String, String)] = [
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"], "jwks": "http://keys.example/k"}]}"#, "https"),
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"], "jwks": "file:k", "algorithms": ["HS256"]}]}"#, "HS256"),
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"], "jwks": "file:k", "algorithms": ["none"]}]}"#, "none"),
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": [], "jwks": "file:k"}]}"#, "audiences"),
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"]}]}"#, "jwks"),
            (
                #"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"], "jwks": "file:k"}, {"name": "b", "issuer": "i", "audiences": ["x"], "jwks": "file:k"}]}"#,
                "issuer"
            ),
            (#"{"providers": [{"name": "a", "issuer": "i", "audiences": ["x"], "jwks": "file:k", "jwk": 1}]}"#, "unknown member"),
            (#"{"provider": []}"#, "providers"),
        ]
        for (json, words) in bad {
            #expect(throws: IdentityConfigurationError.self) { try IdentityProviders(json: Array(json.utf8)) }
            do {
                _ = try IdentityProviders(json: Array(json.utf8))
            } catch {
                #expect("\(error)".contains(words), "\(error)")
            }
        }
    }
}
