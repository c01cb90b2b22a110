import NIOCore
import TestSupport
import Testing

@testable import SyncAPI

/// The producers of streamed answers are children of one service: none runs without it, none outlives it.
@Suite("Answer producers", .sharingTheMachine)
struct AnswerProducersTests {
    @Test("a cancelled answer cancels its producer; stopping the service cancels the rest and refuses new ones (503)")
    func stopCancelsAndRefuses() async throws {
        let producers = AnswerProducers()
        let events = AsyncStream<String>.makeStream()
        var heard = events.stream.makeAsyncIterator()
        try await withThrowingTaskGroup(of: Void.self) { service in
            service.addTask { await producers.run() }
            /// An answer whose producer waits until it is cancelled, then says so.
            func waitingAnswer(_ name: String) -> AnswerStream {
                let stream = AnswerStream(stallLimit: .seconds(600), producerStallLimit: .seconds(600))
                stream.produce(on: producers) {
                    events.continuation.yield("\(name) started")
                    await Self.untilCancelled()
                    events.continuation.yield("\(name) ended, cancelled: \(Task.isCancelled)")
                }
                return stream
            }
            let first = waitingAnswer("first")
            #expect(await heard.next() == "first started")
            first.cancel()
            #expect(await heard.next() == "first ended, cancelled: true")
            _ = waitingAnswer("second")
            #expect(await heard.next() == "second started")
            service.cancelAll()
            #expect(await heard.next() == "second ended, cancelled: true")
            try await service.waitForAll()
        }
        let late = AnswerStream(stallLimit: .seconds(600), producerStallLimit: .seconds(600))
        late.produce(on: producers) { events.continuation.yield("late started") }
        await #expect(throws: SyncError.self) { try await late.date(within: .seconds(600)) }
    }

    @Test("a producer waiting for its reader to read ends when the service stops: nothing of it is left behind")
    func stopEndsAWaitingSend() async throws {
        let producers = AnswerProducers()
        let events = AsyncStream<String>.makeStream()
        var heard = events.stream.makeAsyncIterator()
        try await withThrowingTaskGroup(of: Void.self) { service in
            service.addTask { await producers.run() }
            // Nobody reads it: its first chunk fills it, and the producer waits for room.
            let stream = AnswerStream(capacity: 1, stallLimit: .seconds(600), producerStallLimit: .seconds(600))
            stream.produce(on: producers) {
                stream.setDate("1")
                events.continuation.yield("sending")
                do {
                    try await stream.send(ByteBuffer(string: "chunk"))
                    events.continuation.yield("sent")
                } catch {
                    events.continuation.yield("ended, cancelled: \(error is CancellationError)")
                }
            }
            #expect(await heard.next() == "sending")
            service.cancelAll()
            #expect(await heard.next() == "ended, cancelled: true")
            try await service.waitForAll()
        }
    }

    /// Returns once the calling task is cancelled: a producer with nothing to do but be stopped.
    static func untilCancelled() async {
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
    }
}
