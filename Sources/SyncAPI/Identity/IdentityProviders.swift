import Foundation

/// A provider whose OpenID Connect ID tokens the server trusts (protocol §14): its issuer, the audiences (the app's
/// client ids) a token must name, where its public key set lives, the algorithms it signs with, and the claim that
/// names a new account. The key set is public, so only asymmetric algorithms are ever accepted.
public struct IdentityProvider: Sendable, Equatable {
    /// Where a provider publishes its JSON Web Key Set.
    public enum KeySetLocation: Sendable, Equatable {
        /// `file:PATH`: read again like a URL (a rotated file needs no restart).
        case file(String)
        /// `https://…` (plain `http://` only on loopback, for tests and sidecars).
        case url(String)
    }

    public let name: String
    public let issuer: String
    public let audiences: [String]
    public let keySet: KeySetLocation
    public let algorithms: [String]
    /// The claim that names a new account (`name` for Apple's and Google's profiles); nil: the provider's name.
    public let displayNameClaim: String?

    public init(
        name: String, issuer: String, audiences: [String], keySet: KeySetLocation, algorithms: [String] = ["RS256", "ES256"],
        displayNameClaim: String? = nil
    ) {
        self.name = name
        self.issuer = issuer
        self.audiences = audiences
        self.keySet = keySet
        self.algorithms = algorithms
        self.displayNameClaim = displayNameClaim
    }
}

/// The providers of `--identity FILE`, checked when the server starts so that a typo is an error then, not a refused
/// sign-in later.
public struct IdentityProviders: Sendable, Equatable {
    public let providers: [IdentityProvider]

    /// Signature algorithms a provider may list: RSA (PKCS#1 and PSS), ECDSA and EdDSA. Never `none`, never an HMAC: a
    /// key set is public, so a shared secret taken from it would let anyone sign.
    public static let supportedAlgorithms: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
    ]

    public init(_ providers: [IdentityProvider]) throws {
        var names = Set<String>()
        var issuers = Set<String>()
        for provider in providers {
            let at = "identity provider \"\(provider.name)\""
            guard !provider.name.isEmpty, names.insert(provider.name).inserted else {
                throw IdentityConfigurationError("every provider needs a name of its own (\(provider.name.isEmpty ? "empty" : "repeated"))")
            }
            guard !provider.issuer.isEmpty, issuers.insert(provider.issuer).inserted else {
                throw IdentityConfigurationError("\(at): its issuer is empty or another provider's")
            }
            guard !provider.audiences.isEmpty, !provider.audiences.contains(where: \.isEmpty) else {
                throw IdentityConfigurationError("\(at): audiences must list the app's client ids (none is empty)")
            }
            guard !provider.algorithms.isEmpty else { throw IdentityConfigurationError("\(at): algorithms is empty") }
            for algorithm in provider.algorithms where !Self.supportedAlgorithms.contains(algorithm) {
                throw IdentityConfigurationError(
                    "\(at): algorithm \(algorithm) is not accepted (one of \(Self.supportedAlgorithms.sorted().joined(separator: ", ")))")
            }
            if case .url(let url) = provider.keySet { try Self.checkKeySetURL(url, at) }
        }
        self.providers = providers
    }

    /// An `https` URL, or `http` on a loopback address.
    static func checkKeySetURL(_ text: String, _ at: String) throws {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw IdentityConfigurationError("\(at): jwks \(text) is not a URL")
        }
        if scheme == "https" { return }
        guard scheme == "http", ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased()) else {
            throw IdentityConfigurationError("\(at): jwks must be https (plain http only on loopback), or file:PATH")
        }
    }

    /// Parses the file's JSON: `{"providers": [{"name", "issuer", "audiences", "jwks", "algorithms"?, "displayName"?}]}`.
    public init(json bytes: [UInt8]) throws {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            throw IdentityConfigurationError("the identity file is not JSON: \(error)")
        }
        guard case .object(let top) = root, case .array(let list)? = root["providers"] else {
            throw IdentityConfigurationError("the identity file is {\"providers\": [...]}")
        }
        let allowed: Set = ["name", "issuer", "audiences", "jwks", "algorithms", "displayName"]
        for member in top where member.key != "providers" {
            throw IdentityConfigurationError("unknown member \"\(member.key)\" in the identity file")
        }
        var providers: [IdentityProvider] = []
        for entry in list {
            guard case .object(let members) = entry else { throw IdentityConfigurationError("a provider is an object") }
            let name = entry["name"]?.stringValue ?? ""
            for member in members where !allowed.contains(member.key) {
                throw IdentityConfigurationError("identity provider \"\(name)\": unknown member \"\(member.key)\"")
            }
            func strings(_ key: String) throws -> [String]? {
                guard let value = entry[key] else { return nil }
                guard case .array(let items) = value, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw IdentityConfigurationError("identity provider \"\(name)\": \(key) is a list of strings")
                }
                return items.compactMap(\.stringValue)
            }
            guard let jwks = entry["jwks"]?.stringValue else {
                throw IdentityConfigurationError("identity provider \"\(name)\": jwks (an https URL or file:PATH) is required")
            }
            let keySet: IdentityProvider.KeySetLocation =
                jwks.hasPrefix("file:") ? .file(String(jwks.dropFirst(5))) : .url(jwks)
            providers.append(
                IdentityProvider(
                    name: name, issuer: entry["issuer"]?.stringValue ?? "", audiences: try strings("audiences") ?? [],
                    keySet: keySet, algorithms: try strings("algorithms") ?? ["RS256", "ES256"],
                    displayNameClaim: entry["displayName"]?.stringValue))
        }
        try self.init(providers)
    }

    /// Reads and checks `--identity FILE`.
    public static func load(path: String) throws -> IdentityProviders {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IdentityConfigurationError("cannot read the identity file \(path)")
        }
        return try IdentityProviders(json: Array(data))
    }

    /// The provider whose issuer is `issuer` (compared exactly, as OpenID Connect says).
    public func provider(issuer: String) -> IdentityProvider? { providers.first { $0.issuer == issuer } }
}

/// A mistake in the identity file, said when the server starts.
public struct IdentityConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
