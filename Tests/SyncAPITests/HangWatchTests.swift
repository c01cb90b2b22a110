import Foundation
import TestSupport
import Testing

/// The harness's hang reporter: a step running past the limit is named once; a step that ended is never named.
@Suite("HangWatch")
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
}
