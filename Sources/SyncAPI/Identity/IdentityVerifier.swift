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

/// What an operator counts of sign-ins through providers (`/metrics`): each token checked, by provider (`unknown` when
/// its issuer is none of them) and outcome (`verified`, or the check that refused it), and each key set read.
public struct IdentityEvents: Sendable {
    public let tokenChecked: @Sendable (_ provider: String, _ outcome: String) -> Void
    public let keySetRead: @Sendable (_ provider: String, _ succeeded: Bool) -> Void

    public init(
        tokenChecked: @escaping @Sendable (_ provider: String, _ outcome: String) -> Void,
        keySetRead: @escaping @Sendable (_ provider: String, _ succeeded: Bool) -> Void
    ) {
        self.tokenChecked = tokenChecked
        self.keySetRead = keySetRead
    }

    /// Counts nothing.
    public static let none = IdentityEvents(tokenChecked: { _, _ in }, keySetRead: { _, _ in })
}

/// Checks an OpenID Connect ID token against the configured providers (protocol §14): its issuer, its algorithm, its
/// key, its signature (by JWTKit), its audience (every `aud` trusted, and `azp` one of them when there are several),
/// its times (60 s of leeway) and its subject, in that order. A token that fails answers 401 `invalid_credentials`
/// whose detail names the check; nothing a token holds makes it a 5xx, and only a key id the provider's set does not
/// hold makes the server read the set again (throttled per provider).
public final class IdentityVerifier: Sendable {
    public let providers: IdentityProviders
    /// One key cache per provider, by issuer.
    let caches: [String: KeySetCache]
    let nowMs: @Sendable () -> Int64
    let events: IdentityEvents
    /// The largest token read (an ID token is a few KiB).
    public static let maxTokenBytes = 16 * 1024
    static let leewaySeconds: Double = 60

    public init(
        providers: IdentityProviders, fetcher: KeySetFetcher = .standard, minimumRefresh: Duration = .seconds(30),
        nowMs: @escaping @Sendable () -> Int64 = WallClock.nowMs, events: IdentityEvents = .none
    ) {
        self.providers = providers
        self.nowMs = nowMs
        self.events = events
        var caches: [String: KeySetCache] = [:]
        for provider in providers.providers {
            caches[provider.issuer] = KeySetCache(
                provider: provider, fetcher: fetcher, minimumInterval: minimumRefresh,
                onRead: { events.keySetRead(provider.name, $0) })
        }
        self.caches = caches
    }

    /// The key cache of a provider, by name (for metrics and tests).
    public func cache(named name: String) -> KeySetCache? { caches.values.first { $0.provider.name == name } }

    /// The identity of a valid token; throws 401 `invalid_credentials` naming the failed check otherwise.
    public func verify(_ token: String) async throws -> VerifiedIdentity {
        do {
            let identity = try await check(token)
            events.tokenChecked(identity.provider, "verified")
            return identity
        } catch let refusal as Refusal {
            events.tokenChecked(refusal.provider ?? "unknown", refusal.check)
            throw Self.refused(refusal.check, refusal.why)
        }
    }

    /// A check that failed, and the provider whose token it was (nil before the issuer is known).
    struct Refusal: Error {
        let check: String
        let why: String
        let provider: String?

        init(_ check: String, _ why: String, _ provider: IdentityProvider? = nil) {
            self.check = check
            self.why = why
            self.provider = provider?.name
        }
    }

    private func check(_ token: String) async throws -> VerifiedIdentity {
        guard token.utf8.count <= Self.maxTokenBytes else { throw Refusal("malformed", "the token is over 16 KiB") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.json(parts[0]), let claims = Self.json(parts[1]),
            case .object = header, case .object = claims
        else { throw Refusal("malformed", "not a signed JWT (header.payload.signature, base64url)") }
        guard let issuer = claims["iss"]?.stringValue, let cache = caches[issuer] else {
            throw Refusal("issuer", "no configured provider has this issuer")
        }
        let provider = cache.provider
        guard let algorithm = header["alg"]?.stringValue, provider.algorithms.contains(algorithm) else {
            throw Refusal("algorithm", "\(provider.name) signs with \(provider.algorithms.joined(separator: " or "))", provider)
        }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty, let key = await cache.key(kid) else {
            throw Refusal("unknown key", "the token's kid is not in \(provider.name)'s key set", provider)
        }
        // A key that declares its algorithm verifies only that one (no confusion between RSA padding schemes).
        if let declared = key.declared, declared != algorithm {
            throw Refusal("algorithm", "the key \(kid) is for \(declared)", provider)
        }
        // A key without `alg` verifies the header's algorithm when it fits the key's type, through a verifier of that
        // (key, algorithm) alone: no token can change the algorithm another token is verified with.
        guard let verifier = key.verifiers[algorithm] else {
            throw Refusal("algorithm", "the key \(kid) (\(key.kind)) does not verify \(algorithm)", provider)
        }
        do {
            _ = try await verifier.verify(token, as: SignatureOnly.self)
        } catch {
            throw Refusal("signature", "the signature does not verify with \(provider.name)'s key \(kid)", provider)
        }
        try checkAudience(claims, provider)
        try checkTimes(claims, provider)
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw Refusal("subject", "the token has no sub (or one over 255 bytes)", provider)
        }
        let name = provider.displayNameClaim.flatMap { claims[$0]?.stringValue }.flatMap(Self.displayName)
        return VerifiedIdentity(provider: provider.name, issuer: issuer, subject: subject, displayName: name)
    }

    /// OpenID Connect Core §3.1.3.7: `aud` (a string or an array of strings) names only the provider's audiences (an
    /// additional audience the app does not trust makes the token another party's too), and with several audiences an
    /// `azp` names one of them.
    private func checkAudience(_ claims: JSONValue, _ provider: IdentityProvider) throws {
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let list)?:
            audiences = list.compactMap(\.stringValue)
            guard audiences.count == list.count else { throw Refusal("audience", "aud holds a value that is not a string", provider) }
        default: audiences = []
        }
        guard audiences.contains(where: provider.audiences.contains) else {
            throw Refusal("audience", "the token is not for this app (aud)", provider)
        }
        guard audiences.allSatisfy(provider.audiences.contains) else {
            throw Refusal("audience", "the token is also for an audience this app does not trust (aud)", provider)
        }
        if audiences.count > 1, let presenter = claims["azp"] {
            guard let azp = presenter.stringValue, provider.audiences.contains(azp) else {
                throw Refusal("audience", "the token was issued to another party (azp)", provider)
            }
        }
    }

    /// The display-name claim as an account's name (protocol §2's rules for names): control characters (Unicode
    /// category Cc, U+0000 among them: PostgreSQL cannot store it) dropped, cut at `Limits.nameLength` Unicode scalars;
    /// nil when nothing is left, so the account is named after the provider.
    static func displayName(_ claim: String) -> String? {
        var kept = String.UnicodeScalarView()
        var count = 0
        for scalar in claim.unicodeScalars where scalar.properties.generalCategory != .control {
            guard count < Limits.nameLength else { break }
            kept.append(scalar)
            count += 1
        }
        return count == 0 ? nil : String(kept)
    }

    private func checkTimes(_ claims: JSONValue, _ provider: IdentityProvider) throws {
        let now = Double(nowMs()) / 1000
        guard case .number(let expires)? = claims["exp"] else { throw Refusal("expired", "the token has no exp", provider) }
        guard expires + Self.leewaySeconds > now else { throw Refusal("expired", "the token expired", provider) }
        for claim in ["nbf", "iat"] {
            if let value = claims[claim] {
                guard case .number(let time) = value else { throw Refusal("malformed", "\(claim) is not a number", provider) }
                guard time - Self.leewaySeconds <= now else { throw Refusal("not yet valid", "the token's \(claim) is in the future", provider) }
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
