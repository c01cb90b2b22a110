import NIOCore
import Synchronization

/// A sync answer on its way from a database cursor to a socket, a few chunks at a time, so that a full list of 100,000
/// items is never built whole in memory.
///
/// The producer (a task holding the read snapshot) first sets the answer's date, then sends chunks and waits while
/// `capacity` of them are unread, so memory stays flat however slow the client is; the consumer reads them in order.
/// A consumer that goes away cancels the stream: the producer's next `send` throws and its snapshot ends.
public final class AnswerStream: Sendable {
    /// The hand-over's decisions (`AnswerStreamState`), and what carries them out: the continuations of the waits in
    /// progress, the hooks of a cancellation, and the time limits of the waits (cancelled when their wait ends: an
    /// armed timer holds the whole stream, chunks and all, until it fires).
    private struct Effects {
        var state: AnswerStreamState
        var dateWaiter: CheckedContinuation<String, any Error>?
        var consumer: CheckedContinuation<ByteBuffer?, any Error>?
        var producer: CheckedContinuation<Void, any Error>?
        /// Run once when the stream is cancelled.
        var onCancel: [@Sendable () -> Void] = []
        var dateTimer: TimerWheel.Handle?
        var consumerTimer: TimerWheel.Handle?
        var producerTimer: TimerWheel.Handle?
    }

    private let state: Mutex<Effects>
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
        self.state = Mutex(Effects(state: AnswerStreamState(capacity: capacity)))
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
        state.withLock { $0.state.setDate(date) }
    }

    /// Resumes the consumer waiting for the date, once a chunk is ready or the stream ended.
    private func releaseDate() {
        let (waiter, release, timer) = state.withLock {
            effects -> (CheckedContinuation<String, any Error>?, AnswerStreamState.DateRelease?, TimerWheel.Handle?) in
            guard let release = effects.state.releaseDate() else { return (nil, nil, nil) }
            defer { (effects.dateWaiter, effects.dateTimer) = (nil, nil) }
            return (effects.dateWaiter, release, effects.dateTimer)
        }
        if let timer { timers.cancel(timer) }
        Self.resume(waiter, with: release)
    }

    private static func resume(_ waiter: CheckedContinuation<String, any Error>?, with release: AnswerStreamState.DateRelease?) {
        switch release {
        case .date(let date)?: waiter?.resume(returning: date)
        case .failed(let error)?: waiter?.resume(throwing: error)
        case nil: break
        }
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
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let (action, consumer, consumerTimer) = state.withLock {
                effects -> (AnswerStreamState.SendAction, CheckedContinuation<ByteBuffer?, any Error>?, TimerWheel.Handle?) in
                let action = effects.state.send(chunk)
                switch action {
                case .handOver:
                    defer { (effects.consumer, effects.consumerTimer) = (nil, nil) }
                    return (action, effects.consumer, effects.consumerTimer)
                case .wait:
                    // `next` or `cancel` resumes it.
                    effects.producer = continuation
                    return (action, nil, nil)
                case .queued, .cancelled:
                    return (action, nil, nil)
                }
            }
            if let consumerTimer { timers.cancel(consumerTimer) }
            releaseDate()
            switch action {
            case .handOver:
                delivered.add(chunk.readableBytes, ordering: .relaxed)
                consumer?.resume(returning: chunk)
                continuation.resume()
            case .queued: continuation.resume()
            case .wait(let wait):
                let timer = timers.schedule(in: stallLimit) { self.cancelIfStalled(wait: wait) }
                arm(timer, \.producerTimer) { $0.state.producerStalled(wait) }
            case .cancelled: continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Ends the stream, with an error when the answer could not be completed.
    public func finish(throwing error: (any Error)? = nil) {
        typealias Waiters = (
            consumer: CheckedContinuation<ByteBuffer?, any Error>?, end: AnswerStreamState.EndRelease?,
            date: CheckedContinuation<String, any Error>?, release: AnswerStreamState.DateRelease?, timers: [TimerWheel.Handle]
        )
        let waiters = state.withLock { effects -> Waiters in
            let (end, release) = effects.state.finish(error)
            var waiters: Waiters = (nil, end, nil, release, [])
            if end != nil {
                waiters.consumer = effects.consumer
                waiters.timers += effects.consumerTimer.map { [$0] } ?? []
                (effects.consumer, effects.consumerTimer) = (nil, nil)
            }
            if release != nil {
                waiters.date = effects.dateWaiter
                waiters.timers += effects.dateTimer.map { [$0] } ?? []
                (effects.dateWaiter, effects.dateTimer) = (nil, nil)
            }
            return waiters
        }
        for timer in waiters.timers { timers.cancel(timer) }
        switch waiters.end {
        case .end?: waiters.consumer?.resume(returning: nil)
        case .failed(let error)?: waiters.consumer?.resume(throwing: error)
        case nil: break
        }
        Self.resume(waiters.date, with: waiters.release)
    }

    // MARK: Consumer

    /// The answer's date, once the first chunk is ready; throws the producer's error when it failed before that, and
    /// 503 `unavailable` (the stream cancelled) when it is not ready within `limit`.
    public func date(within limit: Duration) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let action = state.withLock { effects -> AnswerStreamState.DateAction in
                let action = effects.state.requestDate()
                if case .wait = action { effects.dateWaiter = continuation }
                return action
            }
            switch action {
            case .ready(let date): continuation.resume(returning: date)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait:
                let timer = timers.schedule(in: limit) {
                    let waiter = self.state.withLock { effects -> CheckedContinuation<String, any Error>? in
                        guard effects.state.dateTimedOut() else { return nil }
                        defer { (effects.dateWaiter, effects.dateTimer) = (nil, nil) }
                        return effects.dateWaiter
                    }
                    guard let waiter else { return }
                    self.cancel()
                    waiter.resume(throwing: SyncError.unavailable)
                }
                arm(timer, \.dateTimer) { $0.dateWaiter != nil }
            }
        }
    }

    /// The next chunk, nil at the end; throws when the producer failed half-way.
    public func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { continuation in
            let (action, producer, producerTimer) = state.withLock {
                effects -> (AnswerStreamState.NextAction, CheckedContinuation<Void, any Error>?, TimerWheel.Handle?) in
                let action = effects.state.next()
                switch action {
                case .chunk(_, let resumeProducer):
                    guard resumeProducer else { return (action, nil, nil) }
                    defer { (effects.producer, effects.producerTimer) = (nil, nil) }
                    return (action, effects.producer, effects.producerTimer)
                case .wait:
                    effects.consumer = continuation
                    return (action, nil, nil)
                case .end, .failed:
                    return (action, nil, nil)
                }
            }
            if let producerTimer { timers.cancel(producerTimer) }
            producer?.resume()
            switch action {
            case .chunk(let chunk, _):
                delivered.add(chunk.readableBytes, ordering: .relaxed)
                continuation.resume(returning: chunk)
            case .end: continuation.resume(returning: nil)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait(let wait):
                // A producer that stopped producing (a database that stopped answering mid-list) ends the answer,
                // broken, rather than hold the consumer and its connection for good.
                let timer = timers.schedule(in: producerStallLimit) {
                    let consumer = self.state.withLock { effects -> CheckedContinuation<ByteBuffer?, any Error>? in
                        guard effects.state.consumerStalled(wait) else { return nil }
                        defer { (effects.consumer, effects.consumerTimer) = (nil, nil) }
                        return effects.consumer
                    }
                    guard let consumer else { return }
                    self.cancel()
                    consumer.resume(throwing: SyncError.unavailable)
                }
                arm(timer, \.consumerTimer) { $0.state.consumerWait == wait }
            }
        }
    }

    /// Keeps `timer` in `slot` while the wait it limits goes on; cancels it at once when that wait ended before the
    /// timer could be kept (it was set outside the lock).
    private func arm(
        _ timer: TimerWheel.Handle, _ slot: WritableKeyPath<Effects, TimerWheel.Handle?>, whileWaiting waiting: (Effects) -> Bool
    ) {
        let kept = state.withLock { effects in
            guard waiting(effects) else { return false }
            effects[keyPath: slot] = timer
            return true
        }
        if !kept { timers.cancel(timer) }
    }

    private func cancelIfStalled(wait: Int) {
        if state.withLock({ $0.state.producerStalled(wait) }) { cancel() }
    }

    /// The consumer is gone (client disconnected, or a 304 needs no body): the producer stops at its next `send`.
    public func cancel() {
        let (producer, hooks, timer) = state.withLock {
            effects -> (CheckedContinuation<Void, any Error>?, [@Sendable () -> Void], TimerWheel.Handle?) in
            _ = effects.state.cancel()
            defer { (effects.producer, effects.producerTimer, effects.onCancel) = (nil, nil, []) }
            return (effects.producer, effects.onCancel, effects.producerTimer)
        }
        if let timer { timers.cancel(timer) }
        producer?.resume(throwing: CancellationError())
        for hook in hooks { hook() }
    }

    /// Runs `body` when the stream is cancelled (at once when it already was): what the answer held for its client
    /// is given back even while its producer is still stuck in a wait that its cancellation ends later.
    public func whenCancelled(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { effects in
            if effects.state.cancelled { return true }
            effects.onCancel.append(body)
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
