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

    /// Files from disk; URLs over HTTP(S) with a 5 s limit for the whole exchange and a size limit.
    public static let standard = KeySetFetcher { location in
        switch location {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else { throw KeySetError("cannot read \(path)") }
            guard data.count <= maxBytes else { throw KeySetError("\(path) is over \(maxBytes) bytes") }
            return (Array(data), nil)
        case .url(let url):
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            guard response.status == .ok else { throw KeySetError("\(url) answered \(response.status.code)") }
            let body = try await response.body.collect(upTo: maxBytes)
            return (Array(buffer: body), maxAge(response.headers["Cache-Control"].joined(separator: ",")))
        }
    }

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
    public let provider: IdentityProvider
    let fetcher: KeySetFetcher
    let minimumInterval: Duration
    private var keys = JWTKeyCollection()
    /// The key ids held, each with the algorithm its key declares (nil: none declared).
    private var held: [String: String?] = [:]
    private var lastRead: ContinuousClock.Instant?
    private var freshUntil: ContinuousClock.Instant?
    private var reading: Task<Void, Never>?
    /// Reads attempted (for tests and metrics).
    public private(set) var reads = 0
    /// Reads that failed.
    public private(set) var failures = 0

    /// Told of each read: whether it succeeded.
    let onRead: @Sendable (Bool) -> Void

    public init(
        provider: IdentityProvider, fetcher: KeySetFetcher = .standard, minimumInterval: Duration = .seconds(30),
        onRead: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        self.provider = provider
        self.fetcher = fetcher
        self.minimumInterval = minimumInterval
        self.onRead = onRead
    }

    /// The key collection holding `kid` and the algorithm its key declares, reading the set again when allowed; nil
    /// when the key is not held.
    func key(_ kid: String) async -> (keys: JWTKeyCollection, algorithm: String?)? {
        let clock = ContinuousClock()
        let stale = freshUntil.map { clock.now >= $0 } ?? true
        if held[kid] == nil || stale, lastRead.map({ clock.now - $0 >= minimumInterval }) ?? true {
            await readAgain()
        } else if let reading {
            await reading.value
        }
        guard let algorithm = held[kid] else { return nil }
        return (keys, algorithm)
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
            let set = try JSONDecoder().decode(JWKS.self, from: Data(bytes))
            let fresh = JWTKeyCollection()
            var ids: [String: String?] = [:]
            for key in set.keys {
                // Keys without an id cannot be named by a token; keys of other uses (encryption) are not for us.
                guard let kid = key.keyIdentifier?.string, !kid.isEmpty else { continue }
                do {
                    try await fresh.add(jwk: key, isDefault: false)
                    ids[kid] = key.algorithm?.rawValue
                } catch {
                    continue
                }
            }
            keys = fresh
            held = ids
            freshUntil = ContinuousClock().now + (maxAge ?? .seconds(3600))
            onRead(true)
        } catch {
            failures += 1
            onRead(false)
        }
    }
}
