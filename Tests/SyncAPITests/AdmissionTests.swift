import Foundation
import NIOCore
import NIOPosix
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Issue 16, item 6: work a client starts without a token is admitted per address before it costs anything; addresses
/// are counted as one client per IPv4 address or IPv6 /64; the login throttle's windows slide; a stranger cannot
/// lock a user out; signups cannot starve logins of the password hasher.
@Suite("Admission and login throttling", .sharingTheMachine)
struct AdmissionTests {
    @Test("addresses: IPv4-mapped IPv6 is IPv4, IPv6 is canonical and counted by /64")
    func addresses() {
        #expect(ClientAddress.canonical("::ffff:127.0.0.1") == "127.0.0.1")
        #expect(ClientAddress.canonical("::FFFF:7f00:1") == "127.0.0.1")
        #expect(ClientAddress.canonical("127.0.0.1") == "127.0.0.1")
        #expect(ClientAddress.canonical("2001:DB8::1") == "2001:db8:0:0:0:0:0:1")
        #expect(ClientAddress.canonical("[2001:db8::1]") == "2001:db8:0:0:0:0:0:1")
        #expect(ClientAddress.canonical("local") == "local")
        #expect(ClientAddress.key("2001:db8:1:2:aaaa::1") == ClientAddress.key("2001:db8:1:2:ffff:1:2:3"))
        #expect(ClientAddress.key("2001:db8:1:2::1") != ClientAddress.key("2001:db8:1:3::1"))
        #expect(ClientAddress.key("10.0.0.1") == "10.0.0.1")
        #expect(ClientAddress.key("::ffff:10.0.0.1") == "10.0.0.1")
        for malformed in ["1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", ":::", "::ffff:1.2.3"] {
            #expect(ClientAddress.ipv6Groups(malformed) == nil, "\(malformed)")
        }
    }

    @Test("a token bucket per address: the burst, then 429 with the seconds until the next token; refills with time")
    func bucket() throws {
        let clock = Mutex<Int64>(0)
        let limiter = AdmissionLimiter(rate: .init(burst: 3, perMinute: 6), now: { clock.withLock { $0 } })
        for _ in 0..<3 { try limiter.admit("10.0.0.1") }
        #expect(throws: SyncError.self) { try limiter.admit("10.0.0.1") }
        do {
            try limiter.admit("10.0.0.1")
        } catch let error as SyncError {
            #expect(error.code == .tooManyRequests && error.retryAfter == 10)
        }
        // Another address, and another /64, have buckets of their own; the same /64 shares one.
        try limiter.admit("10.0.0.2")
        for n in 1...3 { try limiter.admit("2001:db8::\(n)") }
        #expect(throws: SyncError.self) { try limiter.admit("2001:db8::ffff") }
        clock.withLock { $0 = 10_000 }
        try limiter.admit("10.0.0.1")
        #expect(throws: SyncError.self) { try limiter.admit("10.0.0.1") }
    }

    @Test("the password gate keeps a quarter for checks: signups cannot take the slots logins need")
    func gateReserve() async throws {
        let gate = WorkGate(limit: 4)
        let release = AsyncStream<Void>.makeStream()
        let started = AsyncStream<Void>.makeStream()
        let held = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await gate.run(keeping: 1) {
                            started.continuation.yield()
                            var iterator = release.stream.makeAsyncIterator()
                            _ = await iterator.next()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        for _ in 0..<3 { _ = await iterator.next() }
        await #expect(throws: SyncError.self) { try await gate.run(keeping: 1) {} }
        try await gate.run {}  // a check still gets the kept slot
        for _ in 0..<3 { release.continuation.yield() }
        try await held.value
    }

    @Test("sliding windows: failures just before a window ends still count just after it", arguments: Backend.allCases)
    func slidingWindow(backend: Backend) async throws {
        try await backend.withStore { store in
            let clock = Mutex<Int64>(1_000_000_000)
            let accounts = AccountService(store: store, hasher: CheapHasher(), now: { clock.withLock { $0 } }, collections: Collections.registry)
            _ = try await accounts.signup(.object([("family", .string("F")), ("username", .string("alice")), ("password", .string("password1"))]))
            let guess = JSONValue.object([("username", .string("alice")), ("password", .string("wrong-guess"))])
            /// The code of the failure, nil for a login that passed.
            func attempt() async -> SyncError.Code? {
                do {
                    _ = try await accounts.login(guess, client: "10.0.0.1")
                    return nil
                } catch let error as SyncError {
                    return error.code
                } catch {
                    return .internalError
                }
            }
            #expect(await attempt() == .invalidCredentials)
            clock.withLock { $0 += 899_000 }
            for _ in 0..<9 { #expect(await attempt() == .invalidCredentials) }
            clock.withLock { $0 += 2_000 }
            // A fixed window would start over here and allow ten more guesses at once.
            var statuses: [SyncError.Code?] = []
            for _ in 0..<10 { statuses.append(await attempt()) }
            #expect(statuses.filter { $0 == .invalidCredentials }.count <= 1, "\(statuses)")
            #expect(statuses.contains(.tooManyRequests))
        }
    }

    @Test("a username locked by failures from many addresses is reported once, by a hash, never by name (L6)")
    func lockReportCarriesNoUsername() async throws {
        try await Backend.sqlite.withStore { store in
            let reported = Mutex<[String]>([])
            let accounts = AccountService(
                store: store, hasher: CheapHasher(), onUsernameLocked: { name in reported.withLock { $0.append(name) } },
                collections: Collections.registry)
            _ = try await accounts.signup(.object([("family", .string("F")), ("username", .string("Alice")), ("password", .string("password1"))]))
            let guess = JSONValue.object([("username", .string("alice")), ("password", .string("wrong-guess"))])
            for n in 0..<105 { _ = try? await accounts.login(guess, client: "10.0.\(n / 8).\(n % 8)") }
            #expect(reported.withLock { $0 } == [AccountService.logName(of: "ALICE")])
            #expect(AccountService.logName(of: "alice") == "2bd806c97f0e")  // printf %s alice | sha256sum | cut -c1-12
        }
    }

    @Test("a taken username costs a lookup, not a hash", arguments: Backend.allCases)
    func takenUsernameNotHashed(backend: Backend) async throws {
        try await backend.withStore { store in
            let hasher = CheapHasher()
            let accounts = AccountService(store: store, hasher: hasher, collections: Collections.registry)
            let body = JSONValue.object([("family", .string("F")), ("username", .string("alice")), ("password", .string("password1"))])
            _ = try await accounts.signup(body)
            let before = hasher.hashes.withLock { $0 }
            for _ in 0..<5 {
                await #expect(throws: SyncError.usernameTaken) { _ = try await accounts.signup(body) }
            }
            #expect(hasher.hashes.withLock { $0 } == before)
        }
    }
}

/// A password hasher that costs nothing and counts its hashes.
final class CheapHasher: PasswordHasher {
    let hashes = Mutex(0)

    func hash(_ password: String) async throws -> String {
        hashes.withLock { $0 += 1 }
        return "h:" + password
    }

    func verify(_ password: String, hash: String) async throws -> Bool { hash == "h:" + password }
}

/// Hashes run on a thread pool of their own (security audit M6): media file I/O and other blocking work on the shared
/// pool do not delay a login, and a flood of hashes does not delay them.
@Suite("Password hashing threads", .sharingTheMachine)
struct HashingPoolTests {
    @Test("a hash completes while every thread of the shared blocking pool is busy")
    func hashWhileSharedPoolBusy() async throws {
        let hasher = BcryptPasswordHasher(cost: 4)
        _ = try await hasher.hash("warm-up1")  // the pool's threads exist before the shared pool is taken
        // Every thread of the shared pool held until the hash is done (or, should it wait for them, for a minute):
        // the test waits for events, not for a time that a loaded machine could outlast.
        let threads = System.coreCount
        let release = DispatchSemaphore(value: 0)
        let started = AsyncStream<Void>.makeStream()
        let busy = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<threads {
                    group.addTask {
                        try await NIOThreadPool.singleton.runIfActive {
                            started.continuation.yield()
                            release.wait()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var taken = started.stream.makeAsyncIterator()
        for _ in 0..<threads { await taken.next() }
        let released = Atomic(false)
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(60))
            if !released.exchange(true, ordering: .relaxed) { for _ in 0..<threads { release.signal() } }
        }
        let hash = try await hasher.hash("password1")
        let heldThroughout = !released.exchange(true, ordering: .relaxed)
        if heldThroughout { for _ in 0..<threads { release.signal() } }
        watchdog.cancel()
        #expect(heldThroughout, "the hash waited for a thread of the shared pool")
        #expect(try await hasher.verify("password1", hash: hash))
        try await busy.value
    }
}
