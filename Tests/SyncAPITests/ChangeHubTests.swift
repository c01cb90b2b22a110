import TestSupport
import Testing

@testable import SyncAPI

/// The hub wakes a family's streams on a notice, and lets each wait end by itself after its time limit.
///
/// The time limit is an event loop timer. Left armed after a notice woke the stream, it stayed queued, and held what
/// it names, until the limit (issue 19: every armed timer of this kind cost memory until it fired); it is now
/// cancelled when the wait ends.
@Suite("Change hub", .sharingTheMachine)
struct ChangeHubTests {
    @Test("a notice wakes the family's waiting stream with the new generation, and only that family's")
    func noticeWakes() async throws {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let seen = hub.subscribe(family: "f1")
        let other = Task { await hub.wait(family: "f2", seen: 0, timeout: .seconds(60)) }
        let waiter = Task { await hub.wait(family: "f1", seen: seen, timeout: .seconds(60)) }
        #expect(try await eventually { hub.waiting == 2 })
        hub.notify(family: "f1", version: 42)
        #expect(await waiter.value == seen &+ 1)
        #expect(hub.latestVersion(family: "f1") == 42)
        #expect(hub.waiting == 1)
        other.cancel()
        #expect(await other.value == 0)
        #expect(hub.waiting == 0)
        hub.unsubscribe(family: "f1")
        #expect(hub.followedFamilies == 0)
    }

    @Test("a wait ends after its time limit with no notice, and at once when the generation moved already")
    func timeLimit() async throws {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let seen = hub.subscribe(family: "f1")
        let start = ContinuousClock.now
        #expect(await hub.wait(family: "f1", seen: seen, timeout: .milliseconds(100)) == seen)
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        hub.notify(family: "f1")
        #expect(await hub.wait(family: "f1", seen: seen, timeout: .seconds(60)) == seen &+ 1)
        #expect(hub.waiting == 0)
    }

    @Test("a woken wait leaves no armed timer behind: nothing holds the hub once its streams are done")
    func wokenWaitFreesItsTimer() async throws {
        weak var weakHub: ChangeHub?
        do {
            let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
            weakHub = hub
            let seen = hub.subscribe(family: "f1")
            let waiters = (0..<3).map { _ in Task { await hub.wait(family: "f1", seen: seen, timeout: .seconds(60)) } }
            #expect(try await eventually { hub.waiting == 3 })
            hub.notify(family: "f1")
            for waiter in waiters { #expect(await waiter.value == seen &+ 1) }
            // A cancelled wait gives its timer back too.
            let cancelled = Task { await hub.wait(family: "f1", seen: seen &+ 1, timeout: .seconds(60)) }
            #expect(try await eventually { hub.waiting == 1 })
            cancelled.cancel()
            _ = await cancelled.value
            hub.unsubscribe(family: "f1")
        }
        #expect(
            try await eventually { weakHub == nil }, "the hub is still held after its waits ended (a timer of their 60 s limits)")
    }

    @Test("a wait on several families wakes at the first notice of any of them, once, and leaves nothing filed")
    func waitOnSeveral() async throws {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let seen = ["a": hub.subscribe(family: "a"), "b": hub.subscribe(family: "b"), "@x": hub.subscribe(family: "@x")]
        let waiter = Task { await hub.wait(any: seen, timeout: .seconds(60)) }
        #expect(try await eventually { hub.waiting == 3 })
        hub.notify(family: "b")
        await waiter.value
        #expect(hub.waiting == 0)
        // Moved already: at once; cancelled: at once; nothing filed either way.
        await hub.wait(any: ["a": seen["a"]!, "b": seen["b"]!], timeout: .seconds(60))
        let cancelled = Task { await hub.wait(any: ["a": seen["a"]!, "@x": seen["@x"]!], timeout: .seconds(60)) }
        #expect(try await eventually { hub.waiting == 2 })
        cancelled.cancel()
        await cancelled.value
        #expect(hub.waiting == 0 && hub.subscriptions == 3)
    }

    @Test("a stopped WaitStop ends the wait it filed at once, and every later wait of its stream, of one family or several")
    func stopEndsWaits() async throws {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let seen = ["a": hub.subscribe(family: "a"), "b": hub.subscribe(family: "b")]
        let one = WaitStop()
        let several = WaitStop()
        let other = WaitStop()
        let first = Task { await hub.wait(family: "a", seen: seen["a"]!, timeout: .seconds(600), stop: one) }
        let second = Task { await hub.wait(any: seen, timeout: .seconds(600), stop: several) }
        let untouched = Task { await hub.wait(family: "b", seen: seen["b"]!, timeout: .seconds(600), stop: other) }
        // A failed check below ends the test; its waits end with it.
        defer {
            first.cancel()
            second.cancel()
            untouched.cancel()
        }
        #expect(try await eventually { hub.waiting == 4 })
        one.stop()
        several.stop()
        // Woken at once (their 600 s limits are far away), the other stream's wait still filed.
        try #require(try await eventually { hub.waiting == 1 })
        // Woken with the generation unchanged: no notice came.
        #expect(await first.value == seen["a"]!)
        await second.value
        #expect(hub.waiting == 1, "the other stream's wait stays filed")
        // Stopped for good: a later wait files nothing and returns at once.
        #expect(await hub.wait(family: "a", seen: seen["a"]!, timeout: .seconds(600), stop: one) == seen["a"]!)
        await hub.wait(any: seen, timeout: .seconds(600), stop: several)
        #expect(hub.waiting == 1)
        other.stop()
        try #require(try await eventually { hub.waiting == 0 })
        #expect(await untouched.value == seen["b"]!)
        #expect(hub.waiting == 0)
    }

    @Test("a catch-up wakes only the families whose counter passed what their streams saw, with that counter")
    func catchUpWakesMovedOnly() async throws {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        // (family, what its streams saw, the counter read, woken?, with what version)
        let table: [(String, Int64?, Int64?, Bool, Int64?)] = [
            ("still", 7, 7, false, 7),
            ("moved", 7, 9, true, 9),
            ("unseen", nil, 3, true, 3),
            ("gone", 5, nil, false, 5),  // no row: a key that is not a family (an account's)
        ]
        var generations: [String: UInt64] = [:]
        for (family, seen, _, _, _) in table {
            generations[family] = hub.subscribe(family: family)
            if let seen { hub.observe(family: family, version: seen) }
        }
        let counters = Dictionary(uniqueKeysWithValues: table.compactMap { row in row.2.map { (row.0, $0) } })
        #expect(hub.catchUp(counters, wakeUnread: false) == 2)
        for (family, _, _, woken, version) in table {
            #expect((hub.generation(family: family) != generations[family]) == woken, "\(family)")
            #expect(hub.latestVersion(family: family) == version, "\(family)")
        }
        // On the listener's replacement, keys with no row wake too (a membership notice may have been missed).
        #expect(hub.catchUp(counters, wakeUnread: true) == 1)
        #expect(hub.generation(family: "gone") != generations["gone"])
        // A stream's own read never lowers what the hub knows.
        hub.observe(family: "moved", version: 8)
        #expect(hub.latestVersion(family: "moved") == 9)
    }

    @Test("after a failover a notice on another history replaces the counter heard, even below it, and a catch-up sees it")
    func histories() {
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let seen = hub.subscribe(family: "f")
        hub.notify(family: "f", version: 12)  // the lost line's last commit, heard before the primary died
        // The new line counts from its fork (8): its first write is 9, on its own history.
        hub.notify(family: "f", version: 9, history: "0123456789abcdef")
        #expect(hub.latest(family: "f")! == (9, "0123456789abcdef"))
        // On one history, the higher value stays.
        hub.observe(family: "f", version: 8, history: "0123456789abcdef")
        #expect(hub.latest(family: "f")! == (9, "0123456789abcdef"))
        // A catch-up that reads the same value on another history wakes the family.
        let before = hub.generation(family: "f")
        #expect(hub.catchUp(["f": 9], histories: ["f": "fedcba9876543210"], wakeUnread: false) == 1)
        #expect(hub.generation(family: "f") != before && before != seen)
        #expect(hub.latest(family: "f")! == (9, "fedcba9876543210"))
    }
}
