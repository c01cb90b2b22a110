import Foundation
import JWTKit

/// Who an ID token says its holder is, once every check passed: the account is (`issuer`, `subject`).
public struct VerifiedIdentity: Sendable, Equatable {
    public let provider: String
    public let issuer: String
    public let subject: String
    /// The provider's display-name claim, when the token carries it.
    public let displayName: String?

    public init(provider: String, issuer: String, subject: String, displayName: String?) {
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.displayName = displayName
    }
}

/// Checks an OpenID Connect ID token against the configured providers (protocol §14): its issuer, its algorithm, its
/// key, its signature (by JWTKit), its audience, its times (60 s of leeway) and its subject, in that order. A token
/// that fails answers 401 `invalid_credentials` whose detail names the check; nothing a token holds makes it a 5xx,
/// and only a key id the provider's set does not hold makes the server read the set again (throttled per provider).
public final class IdentityVerifier: Sendable {
    public let providers: IdentityProviders
    /// One key cache per provider, by issuer.
    let caches: [String: KeySetCache]
    let nowMs: @Sendable () -> Int64
    /// The largest token read (an ID token is a few KiB).
    public static let maxTokenBytes = 16 * 1024
    static let leewaySeconds: Double = 60

    public init(
        providers: IdentityProviders, fetcher: KeySetFetcher = .standard, minimumRefresh: Duration = .seconds(30),
        nowMs: @escaping @Sendable () -> Int64 = WallClock.nowMs
    ) {
        self.providers = providers
        self.nowMs = nowMs
        var caches: [String: KeySetCache] = [:]
        for provider in providers.providers {
            caches[provider.issuer] = KeySetCache(provider: provider, fetcher: fetcher, minimumInterval: minimumRefresh)
        }
        self.caches = caches
    }

    /// The key cache of a provider, by name (for metrics and tests).
    public func cache(named name: String) -> KeySetCache? { caches.values.first { $0.provider.name == name } }

    /// The identity of a valid token; throws 401 `invalid_credentials` naming the failed check otherwise.
    public func verify(_ token: String) async throws -> VerifiedIdentity {
        guard token.utf8.count <= Self.maxTokenBytes else { throw Self.refused("malformed", "the token is over 16 KiB") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.json(parts[0]), let claims = Self.json(parts[1]),
            case .object = header, case .object = claims
        else { throw Self.refused("malformed", "not a signed JWT (header.payload.signature, base64url)") }
        guard let issuer = claims["iss"]?.stringValue, let cache = caches[issuer] else {
            throw Self.refused("issuer", "no configured provider has this issuer")
        }
        let provider = cache.provider
        guard let algorithm = header["alg"]?.stringValue, provider.algorithms.contains(algorithm) else {
            throw Self.refused("algorithm", "\(provider.name) signs with \(provider.algorithms.joined(separator: " or "))")
        }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty, let key = await cache.key(kid) else {
            throw Self.refused("unknown key", "the token's kid is not in \(provider.name)'s key set")
        }
        // A key that declares its algorithm verifies only that one (no confusion between RSA padding schemes).
        if let declared = key.algorithm, declared != algorithm {
            throw Self.refused("algorithm", "the key \(kid) is for \(declared)")
        }
        do {
            _ = try await key.keys.verify(token, as: SignatureOnly.self)
        } catch {
            throw Self.refused("signature", "the signature does not verify with \(provider.name)'s key \(kid)")
        }
        try checkAudience(claims["aud"], provider)
        try checkTimes(claims)
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw Self.refused("subject", "the token has no sub (or one over 255 bytes)")
        }
        let name = provider.displayNameClaim.flatMap { claims[$0]?.stringValue }.flatMap { $0.isEmpty ? nil : String($0.prefix(100)) }
        return VerifiedIdentity(provider: provider.name, issuer: issuer, subject: subject, displayName: name)
    }

    private func checkAudience(_ value: JSONValue?, _ provider: IdentityProvider) throws {
        let audiences: [String]
        switch value {
        case .string(let one)?: audiences = [one]
        case .array(let list)?: audiences = list.compactMap(\.stringValue)
        default: audiences = []
        }
        guard audiences.contains(where: provider.audiences.contains) else {
            throw Self.refused("audience", "the token is not for this app (aud)")
        }
    }

    private func checkTimes(_ claims: JSONValue) throws {
        let now = Double(nowMs()) / 1000
        guard case .number(let expires)? = claims["exp"] else { throw Self.refused("expired", "the token has no exp") }
        guard expires + Self.leewaySeconds > now else { throw Self.refused("expired", "the token expired") }
        for claim in ["nbf", "iat"] {
            if let value = claims[claim] {
                guard case .number(let time) = value else { throw Self.refused("malformed", "\(claim) is not a number") }
                guard time - Self.leewaySeconds <= now else { throw Self.refused("not yet valid", "the token's \(claim) is in the future") }
            }
        }
    }

    static func refused(_ check: String, _ why: String) -> SyncError {
        SyncError(.invalidCredentials, detail: "ID token refused (\(check)): \(why).")
    }

    /// A base64url part parsed as JSON; nil when either fails.
    static func json(_ part: Substring) -> JSONValue? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !text.contains("="), text.utf8.allSatisfy({ $0 != UInt8(ascii: " ") }) else { return nil }
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { return nil }
        return try? JSONParser.parse(Array(data))
    }
}

/// The payload JWTKit decodes while it checks a signature: nothing, since the claims are checked above with the
/// server's own parser (every refusal then names its check).
struct SignatureOnly: JWTPayload {
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
