import Crypto
import CryptoExtras
import Foundation
import SyncAPI

/// An identity provider of the tests' own: an RSA and a P-256 key it signs ID tokens with, its key set as JSON, and
/// tokens made to order (any header, any claims, signed by either key, by none or by an HMAC).
public struct TestIdentityProvider: Sendable {
    public let issuer: String
    public let audience: String
    public let rsa: _RSA.Signing.PrivateKey
    public let ec: P256.Signing.PrivateKey
    /// The key ids its key set publishes for each key.
    public let rsaKid: String
    public let ecKid: String

    public init(
        issuer: String = "https://id.example", audience: String = "com.example.app", rsaKid: String = "rsa-1", ecKid: String = "ec-1"
    )
        throws
    {
        self.issuer = issuer
        self.audience = audience
        rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        ec = P256.Signing.PrivateKey()
        self.rsaKid = rsaKid
        self.ecKid = ecKid
    }

    /// The same provider with another RSA key under another id (a rotation).
    public func rotated(rsaKid: String) throws -> TestIdentityProvider {
        try TestIdentityProvider(issuer: issuer, audience: audience, rsaKid: rsaKid, ecKid: ecKid)
    }

    /// Its JSON Web Key Set.
    public func jwks() throws -> String {
        let primitives = try rsa.publicKey.getKeyPrimitives()
        let point = ec.publicKey.x963Representation
        return """
            {"keys": [
              {"kty": "RSA", "kid": "\(rsaKid)", "use": "sig", "alg": "RS256", "n": "\(Self.base64URL(primitives.modulus))", \
            "e": "\(Self.base64URL(primitives.publicExponent))"},
              {"kty": "EC", "kid": "\(ecKid)", "use": "sig", "alg": "ES256", "crv": "P-256", "x": "\(Self.base64URL(point[1..<33]))", \
            "y": "\(Self.base64URL(point[33..<65]))"}
            ]}
            """
    }

    /// One key of a key set as JSON, for sets made to order: its RSA key (`.rsa`, `.rsaPSS`) or its P-256 key (`.ec`),
    /// under `kid` (default: the key's id), with `alg` (default: the signature's; `.some(nil)`: none, as Microsoft
    /// Entra ID publishes), `use` (nil: none) and `key_ops` (nil: none).
    public func jwk(_ key: Signature, kid: String? = nil, alg: String?? = nil, use: String? = "sig", keyOps: [String]? = nil) throws -> String {
        var members: [String: Any] = [:]
        let defaultAlg: String?
        switch key {
        case .ec:
            let point = ec.publicKey.x963Representation
            members = ["kty": "EC", "kid": kid ?? ecKid, "crv": "P-256", "x": Self.base64URL(point[1..<33]), "y": Self.base64URL(point[33..<65])]
            defaultAlg = "ES256"
        case .rsa, .rsaPSS, .none, .hmac:
            let primitives = try rsa.publicKey.getKeyPrimitives()
            members = [
                "kty": "RSA", "kid": kid ?? rsaKid, "n": Self.base64URL(primitives.modulus), "e": Self.base64URL(primitives.publicExponent),
            ]
            defaultAlg = key == .rsaPSS ? "PS256" : "RS256"
        }
        if let alg = alg ?? defaultAlg { members["alg"] = alg }
        if let use { members["use"] = use }
        if let keyOps { members["key_ops"] = keyOps }
        return String(decoding: try JSONSerialization.data(withJSONObject: members, options: .sortedKeys), as: UTF8.self)
    }

    /// A key set of `keys` (each made by `jwk`).
    public static func jwks(_ keys: [String]) -> String { #"{"keys": ["# + keys.joined(separator: ", ") + "]}" }

    /// The provider as the server's configuration names it.
    public func provider(name: String = "test", keySet: IdentityProvider.KeySetLocation, displayName: String? = "name") -> IdentityProvider {
        provider(name: name, keySet: keySet, displayName: displayName, algorithms: ["RS256", "ES256"])
    }

    /// The provider with the algorithms and audiences given (default: its own audience alone).
    public func provider(
        name: String = "test", keySet: IdentityProvider.KeySetLocation, displayName: String? = "name", algorithms: [String],
        audiences: [String]? = nil
    ) -> IdentityProvider {
        IdentityProvider(
            name: name, issuer: issuer, audiences: audiences ?? [audience], keySet: keySet, algorithms: algorithms, displayNameClaim: displayName)
    }

    /// How a token is signed: by the RSA key with PKCS#1 v1.5 (RS256) or PSS (PS256), by the P-256 key (ES256), by
    /// nothing (`alg: none`), or by an HMAC keyed with the public key set (the confusion attack).
    public enum Signature: Sendable { case rsa, ec, none, hmac, rsaPSS }

    /// Claims that pass every check, at `now` (seconds).
    public func claims(subject: String = "user-1", now: Double = Date().timeIntervalSince1970) -> [String: Any] {
        ["iss": issuer, "aud": audience, "sub": subject, "iat": Int(now), "exp": Int(now) + 600, "name": "Ann Example"]
    }

    /// A token with `claims`, its header `alg`/`kid` as given (defaults: those of the signing key).
    public func token(_ claims: [String: Any], signedWith signature: Signature = .rsa, alg: String? = nil, kid: String?? = nil) throws -> String {
        var header: [String: Any] = ["typ": "JWT"]
        switch signature {
        case .rsa: header["alg"] = "RS256"
        case .rsaPSS: header["alg"] = "PS256"
        case .ec: header["alg"] = "ES256"
        case .none: header["alg"] = "none"
        case .hmac: header["alg"] = "HS256"
        }
        if let alg { header["alg"] = alg }
        let defaultKid: String? = signature == .ec ? ecKid : rsaKid
        if let kid = kid ?? defaultKid { header["kid"] = kid }
        let input =
            Self.base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Self.base64URL(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let bytes = Data(input.utf8)
        let signed: Data
        switch signature {
        case .rsa: signed = try rsa.signature(for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5).rawRepresentation
        case .rsaPSS: signed = try rsa.signature(for: SHA256.hash(data: bytes), padding: .PSS).rawRepresentation
        case .ec: signed = try ec.signature(for: bytes).rawRepresentation
        case .none: signed = Data()
        case .hmac:
            // Signed with the public key's bytes as the secret: the classic confusion attack.
            let secret = SymmetricKey(data: Data(try jwks().utf8))
            signed = Data(HMAC<SHA256>.authenticationCode(for: bytes, using: secret))
        }
        return input + "." + Self.base64URL(signed)
    }

    public static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
