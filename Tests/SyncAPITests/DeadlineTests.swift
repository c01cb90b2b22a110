import SyncAPI
import Testing

/// A deadline answers in time whatever its work does, cancels work that began no write, waits for a write that
/// began, and costs one task per request: work nested under a deadline runs inline.
@Suite("Deadline")
struct DeadlineTests {
    @Test("past the limit the caller gets its error, and work that began no write is cancelled (nobody waits for it)")
    func timeout() async throws {
        let finished = AsyncStream<Bool>.makeStream()
        await #expect(throws: SyncError.self) {
            try await Deadline.run(within: .milliseconds(50)) {
                try? await Task.sleep(for: .seconds(30))
                finished.continuation.yield(Task.isCancelled)
                return 1
            }
        }
        var iterator = finished.stream.makeAsyncIterator()
        #expect(await iterator.next() == true, "the read was cancelled at its deadline")
    }

    @Test("a write that began is waited for: its answer says what it did, never a 503 followed by a late commit")
    func writeOutlivesLimit() async throws {
        let start = ContinuousClock.now
        // The limit leaves the work's task time to start on a loaded machine (2 s was once not enough under the full
        // suite on 2 cores); the write then outlives it.
        let answer = try await Deadline.run(within: .seconds(5), grace: .seconds(30)) {
            try Deadline.beginWrite()
            try await Task.sleep(for: .milliseconds(5500))
            return "committed"
        }
        #expect(answer == "committed")
        #expect(ContinuousClock.now - start >= .milliseconds(5500))
    }

    @Test("a write that would begin past the deadline never begins")
    func lateWriteRefused() async throws {
        let began = AsyncStream<Bool>.makeStream()
        await #expect(throws: SyncError.self) {
            try await Deadline.run(within: .milliseconds(50)) {
                // A pool wait that outlives the deadline, then the write.
                await withCheckedContinuation { continuation in
                    Task.detached {
                        try? await Task.sleep(for: .milliseconds(150))
                        continuation.resume()
                    }
                }
                do {
                    try Deadline.beginWrite()
                    began.continuation.yield(true)
                } catch {
                    began.continuation.yield(false)
                }
                return 1
            }
        }
        var iterator = began.stream.makeAsyncIterator()
        #expect(await iterator.next() == false)
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
