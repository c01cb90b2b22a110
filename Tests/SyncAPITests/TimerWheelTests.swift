import NIOPosix
import Synchronization
import TestSupport
import Testing

@testable import SyncAPI

/// The shared timer of the time limits: never early, late by about a slot at most, a cancelled limit never fires
/// and lets what it holds go at once, and the wheel's timer fires for the earliest pending limit only (an idle server
/// with a limit an hour away is not woken every slot).
@Suite("Timer wheel", .sharingTheMachine)
struct TimerWheelTests {
    @Test("limits fire in order, never before their delay, and cancelled ones never")
    func firesAndCancels() async throws {
        let wheel = TimerWheel(resolution: .milliseconds(10))
        let start = ContinuousClock.now
        let fired = Box<[(Int, Duration)]>([])
        var handles: [TimerWheel.Handle] = []
        for index in 0..<40 {
            handles.append(
                wheel.schedule(in: .milliseconds(5 * index)) {
                    let at = ContinuousClock.now - start
                    fired.value.withLock { $0.append((index, at)) }
                })
        }
        // A cancel that comes after its limit fired (a loaded machine may reach it late) does nothing and says so:
        // exactly the limits whose cancel succeeded never fire.
        var cancelled = Set<Int>()
        for (index, handle) in handles.enumerated() where index % 2 == 1 {
            if wheel.cancel(handle) { cancelled.insert(index) }
        }
        let expected = Set(0..<40).subtracting(cancelled)
        // Waited for, not slept on: a loaded machine may run the loop late (never early).
        await Self.settled(wheel, after: .milliseconds(5 * 40))
        let seen = fired.value.withLock { $0 }
        #expect(seen.count == expected.count && Set(seen.map(\.0)) == expected)
        for (index, at) in seen { #expect(at >= .milliseconds(5 * index), "limit \(index) fired at \(at)") }
    }

    @Test("a cancelled limit lets what it holds go at once; after a long idle the wheel fires again")
    func releasesAndRestarts() async throws {
        let wheel = TimerWheel(resolution: .milliseconds(10))
        weak var held: Holder?
        do {
            let holder = Holder()
            held = holder
            let handle = wheel.schedule(in: .seconds(60)) { _ = holder }
            wheel.cancel(handle)
        }
        #expect(held == nil)
        // Idle for many slots, then one limit: it fires.
        try await Task.sleep(for: .milliseconds(300))
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        _ = wheel.schedule(in: .milliseconds(20)) { continuation.yield() }
        var iterator = stream.makeAsyncIterator()
        let woke: Void? = await iterator.next()
        #expect(woke != nil)
    }

    @Test("the loop's timer fires for the earliest pending limit, not every slot: a limit far away costs no turn meanwhile")
    func turnsOnlyWhenDue() async throws {
        let wheel = TimerWheel(resolution: .milliseconds(10))
        let far = wheel.schedule(in: .seconds(3600)) {}
        // Two limits in a row, the second set once the first fired: 150 ms of slots pass, about 15 of them.
        for delay in [50, 100] {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                _ = wheel.schedule(in: .milliseconds(delay)) { done.resume() }
            }
        }
        // One turn for each limit (a timer set for a slot the earlier limit overtook may fire for nothing: one more).
        let turns = wheel.turns.load(ordering: .relaxed)
        #expect(turns >= 2 && turns <= 3, "the loop's timer fired \(turns) times")
        #expect(wheel.cancel(far))
    }

    @Test("thousands of limits from many tasks: each fires once or is cancelled, none lost")
    func concurrent() async throws {
        let wheel = TimerWheel(resolution: .milliseconds(5))
        let fired = Box(0)
        let cancelled = Box(0)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<500 {
                        let handle = wheel.schedule(in: .milliseconds((task * 500 + index) % 50)) { fired.value.withLock { $0 += 1 } }
                        if index % 3 == 0, wheel.cancel(handle) { cancelled.value.withLock { $0 += 1 } }
                    }
                }
            }
        }
        // A cancel that comes after its limit fired (short delays) does nothing and says so: each limit is counted once.
        await Self.settled(wheel, after: .milliseconds(50))
        #expect(fired.value.withLock { $0 } + cancelled.value.withLock { $0 } == 4000)
        #expect(cancelled.value.withLock { $0 } > 0)
    }

    /// Returns once every limit due within `delay` from now has fired: a limit due after them fires after them (the
    /// wheel fires its slots in order), and one set at once after that fires in a later turn, once the whole turn that
    /// fired the first has run. An event, not a time: a cancelled limit that fired anyway, or one that fired twice,
    /// is seen by then.
    static func settled(_ wheel: TimerWheel, after delay: Duration) async {
        for wait in [delay + .milliseconds(20), .zero] {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in _ = wheel.schedule(in: wait) { done.resume() } }
        }
    }

    @Test("a manual wheel's time moves only when advanced, and fires then what is due, in order, never early")
    func manualTime() {
        let wheel = TimerWheel.manual(resolution: .milliseconds(1))
        let fired = Box<[Int]>([])
        #expect(wheel.now == .zero)
        for delay in [30, 10, 20] { _ = wheel.schedule(in: .milliseconds(delay)) { fired.value.withLock { $0.append(delay) } } }
        let cancelled = wheel.schedule(in: .milliseconds(15)) { fired.value.withLock { $0.append(15) } }
        #expect(wheel.cancel(cancelled))
        wheel.advance(by: .milliseconds(9))
        #expect(fired.value.withLock { $0 } == [])
        wheel.advance(by: .milliseconds(11))
        #expect(fired.value.withLock { $0 } == [10, 20])
        #expect(wheel.now == .milliseconds(20))
        wheel.advance(by: .seconds(3600))
        #expect(fired.value.withLock { $0 } == [10, 20, 30])
    }
}

private final class Holder: Sendable {}

private final class Box<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
