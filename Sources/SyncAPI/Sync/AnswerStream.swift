import NIOCore
import NIOPosix
import Synchronization

/// A sync answer on its way from a database cursor to a socket, a few chunks at a time (issue 9: a full list of
/// 100,000 items was built whole in memory, then copied).
///
/// The producer (a task holding the read snapshot) first sets the answer's date, then sends chunks and waits while
/// `capacity` of them are unread, so memory stays flat however slow the client is; the consumer reads them in order.
/// A consumer that goes away cancels the stream: the producer's next `send` throws and its snapshot ends.
public final class AnswerStream: Sendable {
    private struct State {
        var date: String?
        var dateWaiter: CheckedContinuation<String, any Error>?
        var chunks: [ByteBuffer] = []
        var end: Result<Void, any Error>?
        var cancelled = false
        var consumer: CheckedContinuation<ByteBuffer?, any Error>?
        var producer: CheckedContinuation<Void, any Error>?
        /// Counts the producer's waits, so that a stall timer fires only for the wait it was set for.
        var waits = 0
    }

    private let state = Mutex(State())
    let capacity: Int
    /// A producer that waits longer than this for the consumer gives up: the client stopped reading, or the answer
    /// was dropped (a request answered 503 by its deadline never writes its body).
    let stallLimit: Duration

    public init(capacity: Int = 4, stallLimit: Duration = .seconds(30)) {
        self.capacity = capacity
        self.stallLimit = stallLimit
        Self.live.add(1, ordering: .relaxed)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }

    private static let live = Atomic<Int>(0)

    /// Answers alive in this process (their producer, or their consumer, still holds them): for metrics and tests.
    public static var open: Int { live.load(ordering: .relaxed) }

    // MARK: Producer

    /// The answer's date of sync (known once the snapshot is read, before any chunk). The consumer learns it with
    /// the first chunk, so that a failure before any byte is ready still becomes an error answer (503), not a
    /// broken one.
    public func setDate(_ date: String) {
        state.withLock { $0.date = date }
    }

    /// Resumes the consumer waiting for the date, once a chunk is ready or the stream ended.
    private func releaseDate() {
        let (waiter, date) = state.withLock { state -> (CheckedContinuation<String, any Error>?, String?) in
            defer { state.dateWaiter = nil }
            return (state.dateWaiter, state.date)
        }
        guard let waiter else { return }
        if let date { waiter.resume(returning: date) } else { waiter.resume(throwing: CancellationError()) }
    }

    /// Queues a chunk; waits while the consumer is `capacity` chunks behind. Throws once the consumer went away.
    public func send(_ chunk: ByteBuffer) async throws {
        enum Action {
            case handOver(CheckedContinuation<ByteBuffer?, any Error>)
            case queued
            case wait
            case cancelled
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            var wait = 0
            let action = state.withLock { state -> Action in
                if state.cancelled { return .cancelled }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return .handOver(consumer)
                }
                state.chunks.append(chunk)
                if state.chunks.count < capacity { return .queued }
                // `next` or `cancel` resumes it.
                state.producer = continuation
                state.waits += 1
                wait = state.waits
                return .wait
            }
            releaseDate()
            switch action {
            case .handOver(let consumer):
                consumer.resume(returning: chunk)
                continuation.resume()
            case .queued: continuation.resume()
            case .wait:
                let limit = stallLimit
                let wait = wait
                MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(limit.wholeNanoseconds)) {
                    self.cancelIfStalled(wait: wait)
                }
            case .cancelled: continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Ends the stream, with an error when the answer could not be completed.
    public func finish(throwing error: (any Error)? = nil) {
        let (consumer, dateWaiter) = state.withLock { state in
            state.end = error.map { .failure($0) } ?? .success(())
            defer {
                state.consumer = nil
                if error != nil { state.dateWaiter = nil }
            }
            return (state.chunks.isEmpty ? state.consumer : nil, error != nil ? state.dateWaiter : nil)
        }
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
        if let error { dateWaiter?.resume(throwing: error) } else { releaseDate() }
    }

    // MARK: Consumer

    /// The answer's date, once the first chunk is ready; throws the producer's error when it failed before that.
    public func date() async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<String, any Error>? in
                if case .failure(let error) = state.end { return .failure(error) }
                if let date = state.date, !state.chunks.isEmpty || state.end != nil { return .success(date) }
                if state.end != nil { return .failure(CancellationError()) }
                state.dateWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// The next chunk, nil at the end; throws when the producer failed half-way.
    public func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { continuation in
            let (ready, producer) = state.withLock { state -> (Result<ByteBuffer?, any Error>?, CheckedContinuation<Void, any Error>?) in
                if !state.chunks.isEmpty {
                    let chunk = state.chunks.removeFirst()
                    defer { state.producer = nil }
                    return (.success(chunk), state.producer)
                }
                switch state.end {
                case .success?: return (.success(nil), nil)
                case .failure(let error)?: return (.failure(error), nil)
                case nil:
                    state.consumer = continuation
                    return (nil, nil)
                }
            }
            producer?.resume()
            if let ready { continuation.resume(with: ready) }
        }
    }

    private func cancelIfStalled(wait: Int) {
        let stalled = state.withLock { $0.producer != nil && $0.waits == wait }
        if stalled { cancel() }
    }

    /// The consumer is gone (client disconnected, or a 304 needs no body): the producer stops at its next `send`.
    public func cancel() {
        let producer = state.withLock { state in
            state.cancelled = true
            state.chunks = []
            defer { state.producer = nil }
            return state.producer
        }
        producer?.resume(throwing: CancellationError())
    }
}
