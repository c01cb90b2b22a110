import SyncAPI
import Testing

/// A deadline answers in time whatever its work does, never cancels that work, and costs one task per request: work
/// nested under a deadline runs inline.
@Suite("Deadline")
struct DeadlineTests {
    @Test("past the limit the caller gets its error; the work is not cancelled and runs on to its end")
    func timeout() async throws {
        let release = AsyncStream<Void>.makeStream()
        let finished = AsyncStream<Bool>.makeStream()
        await #expect(throws: SyncError.self) {
            try await Deadline.run(within: .milliseconds(50)) {
                // Held until the caller has its answer.
                var held = release.stream.makeAsyncIterator()
                _ = await held.next()
                finished.continuation.yield(Task.isCancelled)
                return 1
            }
        }
        release.continuation.yield()
        var iterator = finished.stream.makeAsyncIterator()
        #expect(await iterator.next() == false, "the work ran on, not cancelled")
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
