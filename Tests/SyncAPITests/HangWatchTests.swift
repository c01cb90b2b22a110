import Foundation
import Synchronization
import TestSupport
import Testing

/// The harness's hang reporter: a step running past the limit is named once; a step that ended is never named.
@Suite("HangWatch", .sharingTheMachine)
struct HangWatchTests {
    @Test("a step past the limit is reported once, with its name; an ended one is not")
    func reportsOnce() async throws {
        let name = "hang-watch-test-\(UUID().uuidString)"
        let running = HangWatch.begin(name + " running")
        let ended = HangWatch.begin(name + " ended")
        HangWatch.end(ended)
        let later = ContinuousClock.now + .seconds(3600)
        let first = HangWatch.late(at: later, after: .seconds(60)).map(\.name).filter { $0.hasPrefix(name) }
        #expect(first == [name + " running"])
        #expect(HangWatch.late(at: later, after: .seconds(60)).map(\.name).filter { $0.hasPrefix(name) }.isEmpty)
        HangWatch.end(running)
        let inside = await HangWatch.step(name + " step") { HangWatch.late(at: later, after: .seconds(60)).map(\.name) }
        #expect(inside.contains(name + " step"))
        #expect(!HangWatch.late(at: later + .seconds(1), after: .seconds(60)).map(\.name).contains(name + " step"))
    }

    @Test("an application whose shutdown hangs after its body: its body's value, on time, and the hang told once")
    func abandonsAHungShutdown() async throws {
        let told = Mutex<[String]>([])
        let began = ContinuousClock.now
        let value = try await HangWatch.application(
            "hung-\(UUID().uuidString)", shutdownLimit: .milliseconds(200),
            abandoned: { message in
                told.withLock { $0.append(message) }
            }
        ) { inBody in
            let value = try await inBody { 7 }
            // A shutdown that ignores cancellation for 60 s (left behind: it ends by itself after the test).
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 60) { continuation.resume() }
            }
            return value
        }
        // Long before the shutdown would end (on a loaded machine the 200 ms timer itself ran 2.6 s late once).
        #expect(value == 7 && ContinuousClock.now - began < .seconds(30))
        #expect(told.withLock { $0.count } == 1 && told.withLock { $0.first?.contains("shutdown had not ended") } == true)
    }

    @Test("an application that shuts down in time: nothing told; a body's error is the run's")
    func passesThrough() async throws {
        let told = Mutex(0)
        let value = try await HangWatch.application("quick", shutdownLimit: .seconds(5), abandoned: { _ in told.withLock { $0 += 1 } }) { inBody in
            try await inBody { "answer" }
        }
        #expect(value == "answer")
        await #expect(throws: CancellationError.self) {
            try await HangWatch.application("throws", shutdownLimit: .seconds(5), abandoned: { _ in told.withLock { $0 += 1 } }) {
                inBody -> Int in
                try await inBody { throw CancellationError() }
            }
        }
        #expect(told.withLock { $0 } == 0)
    }
}
