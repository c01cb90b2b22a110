import SyncAPI
import Testing

/// A deadline answers in time whatever its work does, never cancels that work, and costs one task per request: work
/// nested under a deadline runs inline.
@Suite("Deadline")
struct DeadlineTests {
    @Test("past the limit the caller gets its error at once; the work runs on to its end")
    func timeout() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let finished = AsyncStream<Void>.makeStream()
        await #expect(throws: SyncError.self) {
            try await Deadline.run(within: .milliseconds(100)) {
                try? await Task.sleep(for: .milliseconds(400))
                #expect(!Task.isCancelled)
                finished.continuation.yield()
                return 1
            }
        }
        #expect(clock.now - start < .milliseconds(350))
        var iterator = finished.stream.makeAsyncIterator()
        _ = await iterator.next()
    }

    @Test("nested deadlines run their work inline, in the outer deadline's task")
    func nested() async throws {
        #expect(!Deadline.isBounded)
        let inner = try await Deadline.run(within: .seconds(5)) {
            #expect(Deadline.isBounded)
            return try await Deadline.run(within: .milliseconds(1)) {
                // Inline: the outer limit bounds it, not this one.
                try await Task.sleep(for: .milliseconds(50))
                return Deadline.isBounded
            }
        }
        #expect(inner)
    }
}
