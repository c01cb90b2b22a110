import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1

/// Reads a provider's key set: its bytes, and how long they stay fresh (an HTTP answer's `Cache-Control: max-age`).
public struct KeySetFetcher: Sendable {
    public let read: @Sendable (IdentityProvider.KeySetLocation) async throws -> (bytes: [UInt8], maxAge: Duration?)

    public init(read: @escaping @Sendable (IdentityProvider.KeySetLocation) async throws -> (bytes: [UInt8], maxAge: Duration?)) {
        self.read = read
    }

    /// The largest key set read (a provider's holds a few keys: a few KiB).
    public static let maxBytes = 1 << 20

    /// Files from disk; URLs over HTTP(S) with a 5 s limit for the whole exchange and a size limit, through `client`
    /// (no redirect is followed: a 3xx answer is a failed read).
    public static let standard = KeySetFetcher { location in
        switch location {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else { throw KeySetError("cannot read \(path)") }
            guard data.count <= maxBytes else { throw KeySetError("\(path) is over \(maxBytes) bytes") }
            return (Array(data), nil)
        case .url(let url):
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: .seconds(5))
            guard response.status == .ok else { throw KeySetError("\(url) answered \(response.status.code)") }
            let body = try await response.body.collect(upTo: maxBytes)
            return (Array(buffer: body), maxAge(response.headers["Cache-Control"].joined(separator: ",")))
        }
    }

    /// The HTTP client of key set reads, one for the process (like `HTTPClient.shared`, it lives as long as the process
    /// and is never shut down). Unlike `HTTPClient.shared` it follows no redirect: the identity file's URL was checked
    /// (`https`, plain `http` only on loopback) but a redirect's target would not be, so a provider's answer (or anyone
    /// on the path of a plain-http hop) could otherwise hand the server another key set, or aim it at an internal host.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.redirectConfiguration = .disallow
        configuration.timeout = HTTPClient.Configuration.Timeout(connect: .seconds(5), read: .seconds(5))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// `max-age=N` of a `Cache-Control` value, nil when absent (or `no-store`/`no-cache`: fresh for no time at all).
    static func maxAge(_ header: String) -> Duration? {
        var age: Duration?
        for directive in header.lowercased().split(separator: ",") {
            let part = directive.trimmingCharacters(in: .whitespaces)
            if part == "no-store" || part == "no-cache" { return .zero }
            if part.hasPrefix("max-age="), let seconds = Int64(part.dropFirst(8)), seconds >= 0 { age = .seconds(seconds) }
        }
        return age
    }
}

/// Why a key set could not be read.
struct KeySetError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One provider's keys, read again only when a token names a key it does not hold (a rotation) or the keys went stale,
/// and then at most once per `minimumInterval` whatever callers ask: 10,000 tokens with made-up key ids cost the
/// provider one request. A failed read keeps the keys held (a provider that cannot be reached still verifies the
/// tokens of the keys it had); concurrent callers share one read.
public actor KeySetCache {
    /// A key of the set, by its id: the algorithm it declares, and what verifies its tokens.
    struct HeldKey: Sendable {
        /// The `alg` the key declares; nil when it declares none (Microsoft Entra ID's keys, for one).
        let declared: String?
        /// The key's type, for refusals: `RSA`, `EC P-256`, `OKP Ed25519`.
        let kind: String
        /// One collection per algorithm the key may verify, each holding only this key with that algorithm fixed: its
        /// declared one, or, without `alg`, each of the provider's algorithms that fits the key's type. Built when the
        /// set is read, never chosen by a token: JWTKit keeps, for a key without `alg`, the signer of the first header
        /// `alg` it is asked for (`JWKSigner`), so one forged token could otherwise pin a key to another algorithm.
        let verifiers: [String: JWTKeyCollection]
    }

    public let provider: IdentityProvider
    let fetcher: KeySetFetcher
    let minimumInterval: Duration
    /// The keys held, by id.
    private var held: [String: HeldKey] = [:]
    private var lastRead: ContinuousClock.Instant?
    private var freshUntil: ContinuousClock.Instant?
    private var reading: Task<Void, Never>?
    /// Reads attempted (for tests and metrics).
    public private(set) var reads = 0
    /// Reads that failed.
    public private(set) var failures = 0

    /// Told of each read: whether it succeeded.
    let onRead: @Sendable (Bool) -> Void

    /// How long a read set stays fresh without `max-age`.
    static let defaultFreshness: Duration = .seconds(3600)
    /// The longest a read set stays fresh whatever `max-age` says: a key the provider withdrew is trusted no longer.
    public static let maxFreshness: Duration = .seconds(86_400)

    public init(
        provider: IdentityProvider, fetcher: KeySetFetcher = .standard, minimumInterval: Duration = .seconds(30),
        onRead: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        self.provider = provider
        self.fetcher = fetcher
        self.minimumInterval = minimumInterval
        self.onRead = onRead
    }

    /// How long a set read with `maxAge` (nil: none said) stays fresh: an hour without one, 24 h at most.
    public static func freshness(_ maxAge: Duration?) -> Duration { min(maxAge ?? defaultFreshness, maxFreshness) }

    /// The key `kid`, reading the set again when allowed; nil when the key is not held.
    func key(_ kid: String) async -> HeldKey? {
        let clock = ContinuousClock()
        let stale = freshUntil.map { clock.now >= $0 } ?? true
        if held[kid] == nil || stale, lastRead.map({ clock.now - $0 >= minimumInterval }) ?? true {
            await readAgain()
        } else if let reading {
            await reading.value
        }
        return held[kid]
    }

    private func readAgain() async {
        if let reading { return await reading.value }
        lastRead = ContinuousClock().now
        reads += 1
        let task = Task { await self.read() }
        reading = task
        await task.value
        reading = nil
    }

    private func read() async {
        do {
            let (bytes, maxAge) = try await fetcher.read(provider.keySet)
            let set = try JSONDecoder().decode(ListedKeySet.self, from: Data(bytes))
            var keys: [String: HeldKey] = [:]
            for listed in set.keys {
                // Keys without an id cannot be named by a token; keys for another use (`use` other than `sig`, or
                // `key_ops` without `verify`: encryption keys) are not for us, nor keys JWTKit cannot read.
                guard listed.forVerifying, let key = listed.jwk, let kid = key.keyIdentifier?.string, !kid.isEmpty else { continue }
                guard let entry = await Self.heldKey(key, algorithms: provider.algorithms) else { continue }
                keys[kid] = entry
            }
            held = keys
            freshUntil = ContinuousClock().now + Self.freshness(maxAge)
            onRead(true)
        } catch {
            failures += 1
            onRead(false)
        }
    }

    /// `key` with a verifier per algorithm it may verify (see `HeldKey.verifiers`); nil when JWTKit cannot read it.
    static func heldKey(_ key: JWK, algorithms: [String]) async -> HeldKey? {
        let declared = key.algorithm?.rawValue
        let fitting = fittingAlgorithms(key)
        var verifiers: [String: JWTKeyCollection] = [:]
        for name in declared.map({ [$0] }) ?? algorithms where fitting.contains(name) && algorithms.contains(name) {
            guard let algorithm = JWK.Algorithm(rawValue: name) else { continue }
            var fixed = key
            fixed.algorithm = algorithm
            let collection = JWTKeyCollection()
            do {
                try await collection.add(jwk: fixed, isDefault: false)
            } catch {
                return nil
            }
            verifiers[name] = collection
        }
        let kind = [key.keyType.rawValue, key.curve?.rawValue].compactMap { $0 }.joined(separator: " ")
        return HeldKey(declared: declared, kind: kind, verifiers: verifiers)
    }

    /// The algorithms a key's type can verify: RSA keys PKCS#1 and PSS, an EC key the one of its curve, an OKP key EdDSA.
    static func fittingAlgorithms(_ key: JWK) -> Set<String> {
        switch key.keyType.rawValue {
        case "RSA": return ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
        case "EC":
            switch key.curve?.rawValue ?? "" {
            case "P-256": return ["ES256"]
            case "P-384": return ["ES384"]
            case "P-521": return ["ES512"]
            default: return []
            }
        case "OKP": return key.curve?.rawValue == "Ed25519" ? ["EdDSA"] : []
        default: return []
        }
    }
}

/// A key set as listed: each key read on its own (one that JWTKit cannot read, such as an encryption key of an
/// algorithm it does not know, costs only itself), with what its `use` and `key_ops` say.
struct ListedKeySet: Decodable {
    let keys: [ListedKey]
}

/// One key of a set: JWTKit's reading of it (nil: unreadable), and whether it may verify signatures (RFC 7517 §4.2,
/// §4.3: `use`, when present, is `sig`; `key_ops`, when present, lists `verify`).
struct ListedKey: Decodable {
    let jwk: JWK?
    let forVerifying: Bool

    private enum Member: String, CodingKey {
        case use
        case keyOps = "key_ops"
    }

    init(from decoder: any Decoder) throws {
        jwk = try? JWK(from: decoder)
        guard let members = try? decoder.container(keyedBy: Member.self) else {
            forVerifying = false
            return
        }
        var verifies = true
        if members.contains(.use) {
            let use = try? members.decode(String.self, forKey: .use)
            verifies = verifies && use == "sig"
        }
        if members.contains(.keyOps) {
            let operations = try? members.decode([String].self, forKey: .keyOps)
            verifies = verifies && operations?.contains("verify") == true
        }
        forVerifying = verifies
    }
}
