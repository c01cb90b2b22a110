import NIOCore
import SyncAPI
import Testing

/// The answer stream's hand-over as tables of events and actions (capacity 2): no task, no timer, no waiting. Time
/// limits are events too (`producerStalled`, `consumerStalled`, `dateTimedOut`), named by the wait they were set for.
@Suite("Answer stream's state")
struct AnswerStreamStateTests {
    static let a = ByteBuffer(string: "a")
    static let b = ByteBuffer(string: "b")
    static let c = ByteBuffer(string: "c")

    /// The chunk a `next` answered, or what else it answered, as text.
    static func describe(_ action: AnswerStreamState.NextAction) -> String {
        switch action {
        case .chunk(let chunk, let resumeProducer): "chunk \(String(buffer: chunk))\(resumeProducer ? " +producer" : "")"
        case .end: "end"
        case .failed(let error): "failed \(error)"
        case .wait(let id): "wait \(id)"
        }
    }

    @Test("chunks queue up to the capacity, then the producer waits; each read makes room and wakes it")
    func backPressure() {
        var state = AnswerStreamState(capacity: 2)
        #expect(state.send(Self.a) == .queued)
        #expect(state.send(Self.b) == .wait(1))
        #expect(Self.describe(state.next()) == "chunk a +producer")
        // The producer's limit fires after it was woken: it acts on no wait.
        #expect(state.producerStalled(1) == false)
        #expect(state.send(Self.c) == .wait(2))
        #expect(Self.describe(state.next()) == "chunk b +producer")
        #expect(Self.describe(state.next()) == "chunk c")
        #expect(Self.describe(state.next()) == "wait 3")
        // The waiting consumer takes the next chunk from the producer's hand.
        #expect(state.send(Self.a) == .handOver)
        let (consumer, date) = state.finish(nil)
        #expect(consumer == nil && date == nil)
        #expect(Self.describe(state.next()) == "end")
    }

    @Test("a producer whose consumer stopped reading is stalled at its limit; a cancellation drops the chunks and stops it")
    func stalledProducer() {
        var state = AnswerStreamState(capacity: 1)
        #expect(state.send(Self.a) == .wait(1))
        #expect(state.producerStalled(1))
        #expect(state.cancel() == true)
        #expect(state.cancelled)
        #expect(state.send(Self.b) == .cancelled)
        // Cancelled again: no producer waits.
        #expect(state.cancel() == false)
    }

    @Test("a consumer whose producer stopped producing is stalled at its limit, once; a chunk sent before it fires wins")
    func stalledConsumer() {
        var state = AnswerStreamState(capacity: 4)
        #expect(Self.describe(state.next()) == "wait 1")
        #expect(state.send(Self.a) == .handOver)
        #expect(state.consumerStalled(1) == false)
        #expect(Self.describe(state.next()) == "wait 2")
        #expect(state.consumerStalled(2) == true)
        #expect(state.consumerStalled(2) == false)
    }

    @Test("the date is told with the first chunk; a failure before any chunk is an error answer, not a broken one")
    func date() {
        var state = AnswerStreamState(capacity: 4)
        state.setDate("d1")
        guard case .wait = state.requestDate() else { Issue.record("the date before any chunk"); return }
        #expect(state.send(Self.a) == .queued)
        guard case .date("d1")? = state.releaseDate() else { Issue.record("the date with the first chunk"); return }
        #expect(state.releaseDate() == nil)

        var failing = AnswerStreamState(capacity: 4)
        guard case .wait = failing.requestDate() else { Issue.record("waits"); return }
        let (_, release) = failing.finish(SyncError.unavailable)
        guard case .failed(let error as SyncError)? = release, error.code == .unavailable else {
            Issue.record("the producer's error")
            return
        }
        guard case .failed = failing.requestDate() else { Issue.record("failed for good"); return }

        var late = AnswerStreamState(capacity: 4)
        guard case .wait = late.requestDate() else { Issue.record("waits"); return }
        #expect(late.dateTimedOut() == true)
        #expect(late.dateTimedOut() == false)
    }

    @Test("an end answers the waiting consumer; a failure half-way is told after the chunks already queued")
    func endings() {
        var whole = AnswerStreamState(capacity: 4)
        #expect(Self.describe(whole.next()) == "wait 1")
        guard case .end? = whole.finish(nil).consumer else { Issue.record("the waiting consumer ends"); return }

        var broken = AnswerStreamState(capacity: 4)
        #expect(broken.send(Self.a) == .queued)
        #expect(broken.finish(SyncError.unavailable).consumer == nil)
        #expect(Self.describe(broken.next()) == "chunk a")
        #expect(Self.describe(broken.next()).hasPrefix("failed"))
    }
}

extension AnswerStreamState.EndRelease: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.end, .end): true
        case (.failed, .failed): true
        default: false
        }
    }
}

extension AnswerStreamState.DateRelease: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.date(let l), .date(let r)): l == r
        case (.failed, .failed): true
        default: false
        }
    }
}
