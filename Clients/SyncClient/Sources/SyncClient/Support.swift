import Foundation

/// A value behind a lock, for state shared across tasks on every platform the SDK supports (`Mutex` needs iOS 18).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// How the SDK waits before trying again after a network error, a 429 or a 503: exponential backoff with jitter,
/// never sooner than the server's `Retry-After`.
public struct RetryPolicy: Sendable {
    public var attempts: Int
    public var baseDelay: Duration
    public var maximumDelay: Duration
    /// How to wait (injectable: tests use a fast or virtual one).
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(
        attempts: Int = 4, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.attempts = attempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.sleep = sleep
    }

    /// The wait before attempt `attempt + 1` (0-based), at least `retryAfter` seconds when the server said so.
    func delay(after attempt: Int, retryAfter: Int?) -> Duration {
        let exponential = baseDelay * (1 << min(attempt, 16))
        let capped = min(exponential, maximumDelay)
        let jittered = capped * Double.random(in: 0.5...1.0)
        return max(jittered, .seconds(retryAfter ?? 0))
    }
}

/// Where the session's token lives between launches.
public protocol TokenStore: Sendable {
    func load() throws -> ClientSession?
    func save(_ session: ClientSession) throws
    func clear() throws
}

/// A signed-in session: the bearer token and who it is.
public struct ClientSession: Codable, Sendable, Equatable {
    public var token: String
    public var accountID: String
    public var familyID: String
}

/// The token in a file readable by its owner only (0600): the default on Linux and for the command line. Apps on
/// Apple platforms should pass a Keychain-backed `TokenStore`.
public struct FileTokenStore: TokenStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> ClientSession? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONDecoder().decode(ClientSession.self, from: data)
    }

    public func save(_ session: ClientSession) throws {
        let data = try JSONEncoder().encode(session)
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw SyncClientError.invalid("cannot write the token file \(path)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    public func clear() throws {
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }
}
