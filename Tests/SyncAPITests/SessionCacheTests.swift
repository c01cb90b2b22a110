import Synchronization
import TestSupport
import Testing

@testable import SyncAPI

/// What the session cache keeps and when it lets go (the HTTP side is in `SessionCacheHTTPTests`).
@Suite("Session cache", .sharingTheMachine)
struct SessionCacheTests {
    let alice = AccountSession(
        accountID: "a1", signupSpaceID: "f1",
        memberships: [SpaceMembership(spaceID: "f1", role: .owner, sinceVersion: 0), SpaceMembership(spaceID: "f3", role: .reader, sinceVersion: 7)])
    let bob = AccountSession(accountID: "b1", signupSpaceID: "f2", memberships: [SpaceMembership(spaceID: "f2", role: .owner, sinceVersion: 0)])

    @Test("kept until revoked, expired or old; a revocation drops only its family")
    func keeps() {
        let cache = SessionCache(live: true, lifetime: .seconds(60))
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
        cache.remember(tokenHash: "tb", session: bob, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == alice)
        #expect(cache.session(tokenHash: "ta", nowMs: 60_000) == nil)  // past its lifetime
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 70_000, nowMs: 50_000, ticket: cache.ticket())
        #expect(cache.session(tokenHash: "ta", nowMs: 69_999) == alice)
        #expect(cache.session(tokenHash: "ta", nowMs: 70_000) == nil)  // its token expired
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
        cache.revoke(family: "f1")
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil)
        #expect(cache.session(tokenHash: "tb", nowMs: 1) == bob)
    }

    @Test("a session is filed under each of its spaces and its account: revoking any of them drops it, and only it")
    func spaces() {
        let cache = SessionCache(live: true)
        for key in ["f3", AccountSession.accountKey("a1")] {
            cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
            cache.remember(tokenHash: "tb", session: bob, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
            cache.revoke(family: key)
            #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil, "revoking \(key)")
            #expect(cache.session(tokenHash: "tb", nowMs: 1) == bob)
        }
        // A lookup that raced a change of one of its spaces is not kept.
        let ticket = cache.ticket()
        cache.revoke(family: "f3")
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: ticket)
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil)
        // Its session in each space carries that space's role and start.
        #expect(alice.session(in: "f3") == Session(accountID: "a1", spaceID: "f3", role: .reader, sinceVersion: 7))
        #expect(alice.session(in: nil)?.spaceID == "f1")
        #expect(alice.session(in: "f2") == nil)
    }

    @Test("a lookup that raced a revocation of its family is not kept; one of another family is")
    func race() {
        let cache = SessionCache(live: true)
        let ticket = cache.ticket()
        cache.revoke(family: "f1")  // the logout committed while the lookup ran
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: ticket)
        cache.remember(tokenHash: "tb", session: bob, expiresMs: 100_000, nowMs: 0, ticket: ticket)
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil)
        #expect(cache.session(tokenHash: "tb", nowMs: 1) == bob)
        // Too many revocations since to tell: not kept.
        let old = cache.ticket()
        for n in 0..<300 { cache.revoke(family: "x\(n)") }
        cache.remember(tokenHash: "tc", session: bob, expiresMs: 100_000, nowMs: 0, ticket: old)
        #expect(cache.session(tokenHash: "tc", nowMs: 1) == nil)
    }

    @Test("off while revocations may be missed, and empty when it comes back; bounded")
    func live() {
        let cache = SessionCache(live: false, capacity: 10)
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
        #expect(cache.count == 0)
        cache.setLive(true)
        cache.remember(tokenHash: "ta", session: alice, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket())
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == alice)
        cache.setLive(false)
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil)
        cache.setLive(true)
        #expect(cache.session(tokenHash: "ta", nowMs: 1) == nil)
        for n in 0..<25 { cache.remember(tokenHash: "t\(n)", session: bob, expiresMs: 100_000, nowMs: 0, ticket: cache.ticket()) }
        #expect(cache.count <= 10)
    }

    @Test("concurrent lookups of one token share one database read; a revocation between them starts another")
    func sharedLookups() async throws {
        let lookups = SessionLookups()
        final class Reads: Sendable { let count = Mutex(0) }
        let reads = Reads()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let alice = self.alice
        // The first caller's read waits for the gate while 49 others arrive for the same key.
        let answers = try await withThrowingTaskGroup(of: AccountSession?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await lookups.lookup("t:0") {
                        reads.count.withLock { $0 += 1 }
                        for await _ in gate { break }
                        return (alice, 1_000)
                    }?.session
                }
            }
            // Opened once the 49 others wait for the first one's read.
            while lookups.waiters("t:0") != 49 { await Task.yield() }
            open.yield()
            open.finish()
            return try await group.reduce(into: [AccountSession?]()) { $0.append($1) }
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0 == alice })
        #expect(reads.count.withLock { $0 } == 1)
        // The epoch keys the sharing: a revocation moves it; while revocations may be missed there is none.
        let cache = SessionCache(live: true)
        let before = try #require(cache.sharedLookupEpoch())
        cache.revoke(family: "f1")
        #expect(cache.sharedLookupEpoch() != before)
        cache.setLive(false)
        #expect(cache.sharedLookupEpoch() == nil)
    }
}
