import NIOCore

/// The answer stream's hand-over as a value (`AnswerStream` carries out its actions: the producer's, the consumer's
/// and the date's continuations, and their time limits on the application's clock): chunks queued or handed over,
/// who waits, who is woken, and what a time limit that fires, an end or a cancellation does. Each wait has an id, so a
/// time limit acts only on the wait it was set for; every transition is a line of a table in its test.
public struct AnswerStreamState: Sendable {
    /// What a chunk sent by the producer is answered.
    public enum SendAction: Equatable, Sendable {
        /// The consumer was waiting: it takes the chunk now (its wait's limit dropped), and the producer goes on.
        case handOver
        /// Queued behind fewer than `capacity` chunks: the producer goes on.
        case queued
        /// Queued, and `capacity` chunks are unread: the producer waits (wait `id`) for the consumer or a cancellation.
        case wait(Int)
        /// The consumer went away: the producer stops.
        case cancelled
    }

    /// What the consumer asking for the next chunk is answered.
    public enum NextAction: Sendable {
        /// The next chunk; `resumeProducer`: the producer was waiting for room and goes on (its limit dropped).
        case chunk(ByteBuffer, resumeProducer: Bool)
        /// The answer is whole.
        case end
        /// The producer failed half-way.
        case failed(any Error)
        /// Nothing yet: the consumer waits (wait `id`) for a chunk, the end, or its limit.
        case wait(Int)
    }

    /// What the consumer asking for the answer's date is answered.
    public enum DateAction: Sendable {
        case ready(String)
        case failed(any Error)
        /// Not known yet (no chunk ready): the consumer waits for it, or its limit.
        case wait
    }

    /// What a waiting date request is resumed with, once a chunk is ready or the answer ended.
    public enum DateRelease: Sendable {
        case date(String)
        case failed(any Error)
    }

    /// What the consumer waiting when the answer ends is answered.
    public enum EndRelease: Sendable {
        case end
        case failed(any Error)
    }

    let capacity: Int
    private(set) var date: String?
    private(set) var chunks: [ByteBuffer] = []
    private(set) var end: Result<Void, any Error>?
    public private(set) var cancelled = false
    /// Whether the consumer waits for the date.
    private(set) var dateWaiting = false
    /// The consumer's wait in progress, and the producer's.
    private(set) var consumerWait: Int?
    private(set) var producerWait: Int?
    private var waits = 0

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The producer read its snapshot: the answer's date (told to the consumer with the first chunk).
    public mutating func setDate(_ date: String) {
        self.date = date
    }

    /// The producer sends a chunk.
    public mutating func send(_ chunk: ByteBuffer) -> SendAction {
        if cancelled { return .cancelled }
        if consumerWait != nil {
            consumerWait = nil
            return .handOver
        }
        chunks.append(chunk)
        if chunks.count < capacity { return .queued }
        waits += 1
        producerWait = waits
        return .wait(waits)
    }

    /// The date request waiting, resumed now that a chunk is ready or the answer ended; nil when none waits.
    public mutating func releaseDate() -> DateRelease? {
        guard dateWaiting else { return nil }
        dateWaiting = false
        return date.map { .date($0) } ?? .failed(CancellationError())
    }

    /// The producer ends the answer, whole (nil) or failed: the consumer waiting is answered (a failure also answers
    /// the date request waiting).
    public mutating func finish(_ error: (any Error)?) -> (consumer: EndRelease?, date: DateRelease?) {
        end = error.map { .failure($0) } ?? .success(())
        var consumer: EndRelease?
        if chunks.isEmpty, consumerWait != nil {
            consumerWait = nil
            consumer = error.map { .failed($0) } ?? .end
        }
        guard let error else { return (consumer, releaseDate()) }
        let date: DateRelease? = dateWaiting ? .failed(error) : nil
        dateWaiting = false
        return (consumer, date)
    }

    /// The consumer asks for the answer's date.
    public mutating func requestDate() -> DateAction {
        if case .failure(let error) = end { return .failed(error) }
        if let date, !chunks.isEmpty || end != nil { return .ready(date) }
        if end != nil { return .failed(CancellationError()) }
        dateWaiting = true
        return .wait
    }

    /// The date's limit fired: true when it was still awaited (the answer is then cancelled, the request answered 503).
    public mutating func dateTimedOut() -> Bool {
        guard dateWaiting else { return false }
        dateWaiting = false
        return true
    }

    /// The consumer asks for the next chunk.
    public mutating func next() -> NextAction {
        if !chunks.isEmpty {
            let chunk = chunks.removeFirst()
            defer { producerWait = nil }
            return .chunk(chunk, resumeProducer: producerWait != nil)
        }
        switch end {
        case .success?: return .end
        case .failure(let error)?: return .failed(error)
        case nil:
            waits += 1
            consumerWait = waits
            return .wait(waits)
        }
    }

    /// The producer's wait `id` ran past its limit: true when it still waits (the client stopped reading: the answer
    /// is cancelled).
    public func producerStalled(_ id: Int) -> Bool {
        producerWait == id
    }

    /// The consumer's wait `id` ran past its limit: true when it still waits (the database stopped answering
    /// mid-list: the answer is cancelled, the consumer answered 503).
    public mutating func consumerStalled(_ id: Int) -> Bool {
        guard consumerWait == id else { return false }
        consumerWait = nil
        return true
    }

    /// The consumer went away: the chunks are dropped; true when the producer was waiting (it stops now).
    public mutating func cancel() -> Bool {
        cancelled = true
        chunks = []
        defer { producerWait = nil }
        return producerWait != nil
    }
}
