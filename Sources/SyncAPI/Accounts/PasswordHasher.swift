import Crypto
import Foundation
import HummingbirdBcrypt
import NIOCore
import NIOPosix
import Synchronization

/// Turns passwords into slow salted hashes and checks them; slow on purpose, so it runs off the event loops.
public protocol PasswordHasher: Sendable {
    /// A new salted hash of `password` (signup, a new account, a new password).
    func hash(_ password: String) async throws -> String
    /// True when `password` matches `hash` (login, the old password of a change).
    func verify(_ password: String, hash: String) async throws -> Bool
    /// The same work as `verify`, for a login whose username does not exist (both failures take the same time).
    func verifyNothing(_ password: String) async throws
}

extension PasswordHasher {
    public func verifyNothing(_ password: String) async throws { _ = try await hash(password) }
}

/// bcrypt over SHA-256 of the password (so passwords longer than bcrypt's 72 bytes keep all their strength),
/// computed on NIO's blocking thread pool.
///
/// The work is bounded: past `maxPending` hashes queued or running, a call throws 503 `unavailable` at once instead
/// of queueing, so a flood of unauthenticated logins cannot starve real ones (protocol §1). New hashes (signup, new
/// accounts, new passwords) may use only three quarters of the gate: the rest is kept for checks (login, password),
/// so a flood of signups never stops a user from logging in.
public struct BcryptPasswordHasher: PasswordHasher {
    /// bcrypt cost (log2 rounds); 12 in production, 4 (the minimum) makes tests fast.
    public let cost: UInt8
    let gate: WorkGate

    /// `maxPending` defaults to 4 per core: at cost 12 that is about a second of queue.
    public init(cost: UInt8 = 12, maxPending: Int = 4 * System.coreCount) {
        self.cost = cost
        self.gate = WorkGate(limit: maxPending)
    }

    /// The threads hashes run on, of their own: a flood of logins never delays media file I/O (which runs on
    /// `NIOThreadPool.singleton`), and a slow disk never delays a login. One thread per core; the gate bounds what
    /// waits for them.
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: System.coreCount)
        pool.start()
        return pool
    }()

    static func prehash(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }

    public func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await gate.run(keeping: gate.limit / 4) {
            try await Self.pool.runIfActive { Bcrypt.hash(Self.prehash(password), cost: cost) }
        }
    }

    public func verify(_ password: String, hash: String) async throws -> Bool {
        try await gate.run { try await Self.pool.runIfActive { Bcrypt.verify(Self.prehash(password), hash: hash) } }
    }

    public func verifyNothing(_ password: String) async throws {
        let cost = self.cost
        _ = try await gate.run { try await Self.pool.runIfActive { Bcrypt.hash(Self.prehash(password), cost: cost) } }
    }
}

/// Admits at most `limit` concurrent pieces of work; past it, throws 503 `unavailable` with `Retry-After` at once.
public final class WorkGate: Sendable {
    let limit: Int
    private let running = Atomic<Int>(0)

    public init(limit: Int) { self.limit = max(1, limit) }

    /// `keeping`: slots this work may not take (kept for other work).
    public func run<T: Sendable>(keeping reserved: Int = 0, _ body: () async throws -> T) async throws -> T {
        guard running.wrappingAdd(1, ordering: .relaxed).newValue <= max(1, limit - reserved) else {
            running.wrappingSubtract(1, ordering: .relaxed)
            throw SyncError(.unavailable, detail: "The server is busy checking passwords; retry shortly.", retryAfter: 2)
        }
        defer { running.wrappingSubtract(1, ordering: .relaxed) }
        return try await body()
    }
}

/// Bearer tokens: 256 random bits for the client, SHA-256 of them for the store.
public enum BearerToken {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    public static func storageHash(_ token: String) -> String {
        Hex.lowercase(SHA256.hash(data: Data(token.utf8)))
    }
}

/// Lowercase hexadecimal, without `String(format:)` (slow on Linux): token hashes and media names.
public enum Hex {
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
