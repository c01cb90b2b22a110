import NIOCore
import Synchronization

/// A sync answer on its way from a database cursor to a socket, a few chunks at a time, so that a full list of 100,000
/// items is never built whole in memory.
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
        /// Counts the consumer's waits, likewise.
        var consumerWaits = 0
        /// Run once when the stream is cancelled.
        var onCancel: [@Sendable () -> Void] = []
        /// The time limits of the waits in progress (the date's, the consumer's, the producer's), cancelled when their
        /// wait ends: an armed timer holds the whole stream, chunks and all, until it fires.
        var dateTimer: TimerWheel.Handle?
        var consumerTimer: TimerWheel.Handle?
        var producerTimer: TimerWheel.Handle?
    }

    private let state = Mutex(State())
    private let delivered = Atomic<Int>(0)
    let capacity: Int
    /// A producer that waits longer than this for the consumer gives up: the client stopped reading, or the answer
    /// was dropped (a request answered 503 by its deadline never writes its body).
    let stallLimit: Duration
    /// A consumer that waits longer than this for the next chunk ends the answer, broken (the database stopped
    /// answering mid-list).
    let producerStallLimit: Duration
    /// The application's clock, for the three time limits.
    let timers: TimerWheel

    public init(
        capacity: Int = 4, stallLimit: Duration = .seconds(30), producerStallLimit: Duration = .seconds(10), timers: TimerWheel = .shared
    ) {
        self.timers = timers
        self.capacity = capacity
        self.stallLimit = stallLimit
        self.producerStallLimit = producerStallLimit
        Self.live.add(1, ordering: .relaxed)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }

    private static let live = Atomic<Int>(0)

    /// Bytes handed to the consumer so far: the pace at which the client reads (`SnapshotBudget.Pace`).
    public var deliveredBytes: Int { delivered.load(ordering: .relaxed) }

    /// Answers alive in this process (their producer, or their consumer, still holds them): for metrics and tests.
    public static var open: Int { live.load(ordering: .relaxed) }

    // MARK: Producer

    /// Runs `produce` as the stream's producer, a child task of `producers` (the answer outlives its request: it runs
    /// outside the request's deadline, so its store calls get their own), cancelled by `cancel()`. When `producers`
    /// has stopped, the answer ends 503 `unavailable`.
    public func produce(on producers: AnswerProducers, _ produce: @escaping @Sendable () async -> Void) {
        producers.start(
            { [self] in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await produce() }
                    group.addTask { await self.untilCancelled() }
                    await group.next()
                    group.cancelAll()
                }
            },
            refused: { [self] in finish(throwing: SyncError.unavailable) })
    }

    /// Returns once the stream is cancelled, or the calling task is.
    private func untilCancelled() async {
        let once = ResumeOnce()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                once.arm(continuation)
                whenCancelled { once.resume() }
            }
        } onCancel: {
            once.resume()
        }
    }

    /// The answer's date of sync (known once the snapshot is read, before any chunk). The consumer learns it with
    /// the first chunk, so that a failure before any byte is ready still becomes an error answer (503), not a
    /// broken one.
    public func setDate(_ date: String) {
        state.withLock { $0.date = date }
    }

    /// Resumes the consumer waiting for the date, once a chunk is ready or the stream ended.
    private func releaseDate() {
        let (waiter, date, timer) = state.withLock { state -> (CheckedContinuation<String, any Error>?, String?, TimerWheel.Handle?) in
            guard let waiter = state.dateWaiter else { return (nil, nil, nil) }
            defer {
                state.dateWaiter = nil
                state.dateTimer = nil
            }
            return (waiter, state.date, state.dateTimer)
        }
        if let timer { timers.cancel(timer) }
        guard let waiter else { return }
        if let date { waiter.resume(returning: date) } else { waiter.resume(throwing: CancellationError()) }
    }

    /// Queues a chunk; waits while the consumer is `capacity` chunks behind. Throws once the consumer went away, or
    /// once the producer is cancelled (which cancels the stream: nobody is left to finish the answer).
    public func send(_ chunk: ByteBuffer) async throws {
        try await withTaskCancellationHandler {
            try await queue(chunk)
        } onCancel: {
            cancel()
        }
    }

    private func queue(_ chunk: ByteBuffer) async throws {
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
                    state.consumerTimer.map { timers.cancel($0) }
                    state.consumerTimer = nil
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
                delivered.add(chunk.readableBytes, ordering: .relaxed)
                consumer.resume(returning: chunk)
                continuation.resume()
            case .queued: continuation.resume()
            case .wait:
                let limit = stallLimit
                let wait = wait
                let timer = timers.schedule(in: limit) { self.cancelIfStalled(wait: wait) }
                arm(timer, \.producerTimer) { $0.producer != nil && $0.waits == wait }
            case .cancelled: continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Ends the stream, with an error when the answer could not be completed.
    public func finish(throwing error: (any Error)? = nil) {
        typealias Waiters = (CheckedContinuation<ByteBuffer?, any Error>?, CheckedContinuation<String, any Error>?)
        let (consumer, dateWaiter) = state.withLock { state -> Waiters in
            state.end = error.map { .failure($0) } ?? .success(())
            let consumer = state.chunks.isEmpty ? state.consumer : nil
            if consumer != nil {
                state.consumer = nil
                state.consumerTimer.map { timers.cancel($0) }
                state.consumerTimer = nil
            }
            guard error != nil else { return (consumer, nil) }
            defer {
                state.dateWaiter = nil
                state.dateTimer.map { timers.cancel($0) }
                state.dateTimer = nil
            }
            return (consumer, state.dateWaiter)
        }
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
        if let error { dateWaiter?.resume(throwing: error) } else { releaseDate() }
    }

    // MARK: Consumer

    /// The answer's date, once the first chunk is ready; throws the producer's error when it failed before that, and
    /// 503 `unavailable` (the stream cancelled) when it is not ready within `limit`.
    public func date(within limit: Duration) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<String, any Error>? in
                if case .failure(let error) = state.end { return .failure(error) }
                if let date = state.date, !state.chunks.isEmpty || state.end != nil { return .success(date) }
                if state.end != nil { return .failure(CancellationError()) }
                state.dateWaiter = continuation
                return nil
            }
            if let ready {
                continuation.resume(with: ready)
                return
            }
            let timer = timers.schedule(in: limit) {
                let waiter = self.state.withLock { state in
                    defer {
                        state.dateWaiter = nil
                        state.dateTimer = nil
                    }
                    return state.dateWaiter
                }
                guard let waiter else { return }
                self.cancel()
                waiter.resume(throwing: SyncError.unavailable)
            }
            arm(timer, \.dateTimer) { $0.dateWaiter != nil }
        }
    }

    /// The next chunk, nil at the end; throws when the producer failed half-way.
    public func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { continuation in
            var wait = 0
            let (ready, producer) = state.withLock { state -> (Result<ByteBuffer?, any Error>?, CheckedContinuation<Void, any Error>?) in
                if !state.chunks.isEmpty {
                    let chunk = state.chunks.removeFirst()
                    defer {
                        state.producer = nil
                        state.producerTimer.map { timers.cancel($0) }
                        state.producerTimer = nil
                    }
                    return (.success(chunk), state.producer)
                }
                switch state.end {
                case .success?: return (.success(nil), nil)
                case .failure(let error)?: return (.failure(error), nil)
                case nil:
                    state.consumer = continuation
                    state.consumerWaits += 1
                    wait = state.consumerWaits
                    return (nil, nil)
                }
            }
            producer?.resume()
            if let ready {
                if case .success(let chunk?) = ready { delivered.add(chunk.readableBytes, ordering: .relaxed) }
                continuation.resume(with: ready)
                return
            }
            // A producer that stopped producing (a database that stopped answering mid-list) ends the answer, broken,
            // rather than hold the consumer and its connection for good.
            let timed = wait
            let timer = timers.schedule(in: producerStallLimit) {
                let consumer = self.state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
                    guard state.consumerWaits == timed, let consumer = state.consumer else { return nil }
                    state.consumer = nil
                    state.consumerTimer = nil
                    return consumer
                }
                guard let consumer else { return }
                self.cancel()
                consumer.resume(throwing: SyncError.unavailable)
            }
            arm(timer, \.consumerTimer) { $0.consumerWaits == timed && $0.consumer != nil }
        }
    }

    /// Keeps `timer` in `slot` while the wait it limits goes on; cancels it at once when that wait ended before the
    /// timer could be kept (it was set outside the lock).
    private func arm(
        _ timer: TimerWheel.Handle, _ slot: WritableKeyPath<State, TimerWheel.Handle?>,
        whileWaiting waiting: (State) -> Bool
    ) {
        let kept = state.withLock { state in
            guard waiting(state) else { return false }
            state[keyPath: slot] = timer
            return true
        }
        if !kept { timers.cancel(timer) }
    }

    private func cancelIfStalled(wait: Int) {
        let stalled = state.withLock { $0.producer != nil && $0.waits == wait }
        if stalled { cancel() }
    }

    /// The consumer is gone (client disconnected, or a 304 needs no body): the producer stops at its next `send`.
    public func cancel() {
        let (producer, hooks) = state.withLock { state in
            state.cancelled = true
            state.chunks = []
            defer {
                state.producer = nil
                state.producerTimer.map { timers.cancel($0) }
                state.producerTimer = nil
                state.onCancel = []
            }
            return (state.producer, state.onCancel)
        }
        producer?.resume(throwing: CancellationError())
        for hook in hooks { hook() }
    }

    /// Runs `body` when the stream is cancelled (at once when it already was): what the answer held for its client
    /// is given back even while its producer is still stuck in a wait that its cancellation ends later.
    public func whenCancelled(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.cancelled { return true }
            state.onCancel.append(body)
            return false
        }
        if now { body() }
    }
}

/// A continuation resumed once, by whichever of its resumers comes first (also before it is armed).
private final class ResumeOnce: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Void, Never>?, resumed: Bool)>((nil, false))

    func arm(_ continuation: CheckedContinuation<Void, Never>) {
        let resumed = state.withLock { state in
            if !state.resumed { state.continuation = continuation }
            return state.resumed
        }
        if resumed { continuation.resume() }
    }

    func resume() {
        let continuation = state.withLock { state in
            state.resumed = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
