import NIOCore
import TestSupport
import Testing

@testable import SyncAPI

/// A streamed answer (a full list, a group) must be freed as soon as it is sent or its client went away.
///
/// Its time limits are event loop timers. Left armed after their wait ended, each held the whole stream, chunks
/// included, until it fired: a group's answer stayed in memory for the request time limit after it was sent, and
/// 10 s of groups on one SQLite instance grew the server from 48 MiB to 1 GiB (issue 19). The timers are now
/// cancelled when their wait ends.
@Suite("Answer streams", .sharingTheMachine)
struct AnswerStreamTests {
    /// A stream whose every time limit is a minute, and a producer that waits a little before its first chunk (so
    /// the consumer waits for the date) and then sends `chunks` chunks of 1 KB.
    static func answer(chunks: Int) -> AnswerStream {
        let stream = AnswerStream(capacity: 1, stallLimit: .seconds(60), producerStallLimit: .seconds(60))
        stream.produce(on: .testing) {
            try? await Task.sleep(for: .milliseconds(50))
            stream.setDate("7.42")
            do {
                for n in 0..<chunks {
                    try await stream.send(ByteBuffer(string: "\(n)," + String(repeating: "x", count: 1000)))
                    // Now and then the consumer is ahead and waits for the next chunk.
                    if n % 3 == 0 { try await Task.sleep(for: .milliseconds(2)) }
                }
                stream.finish()
            } catch {
                stream.finish(throwing: error)
            }
        }
        return stream
    }

    @Test("an answer read to its end is freed at once: its time limits do not hold it until they fire")
    func freedWhenRead() async throws {
        weak var weakStream: AnswerStream?
        var received = 0
        do {
            let stream = Self.answer(chunks: 30)
            weakStream = stream
            #expect(try await stream.date(within: .seconds(60)) == "7.42")
            while let chunk = try await stream.next() {
                received += chunk.readableBytes
                // A slower reader now and then: the producer waits for room.
                if received % 5 == 0 { try await Task.sleep(for: .milliseconds(2)) }
            }
        }
        #expect(received > 30_000)
        #expect(try await eventually { weakStream == nil }, "the answer is still held after it was read (a timer of its 60 s limits)")
    }

    @Test("an answer whose client went away half-way is freed at once")
    func freedWhenCancelled() async throws {
        weak var weakStream: AnswerStream?
        do {
            let stream = Self.answer(chunks: 1000)
            weakStream = stream
            _ = try await stream.date(within: .seconds(60))
            _ = try await stream.next()
            _ = try await stream.next()
            stream.cancel()
        }
        #expect(try await eventually { weakStream == nil }, "the cancelled answer is still held (a timer of its 60 s limits)")
    }
}
