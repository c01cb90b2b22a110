import NIOCore
import NIOPosix
import Synchronization

/// A hard time bound on work that may hang (a database that stopped answering): the caller gets its answer, or
/// `onTimeout`, within the limit, whatever the work does.
///
/// The work runs in its own task and is never cancelled from here: a transaction it holds always ends by its own
/// `COMMIT` or `ROLLBACK`, never half-way because a caller gave up (protocol §8: bounded, and nothing acknowledged
/// is lost). A caller that is cancelled stops waiting at once.
///
/// One deadline per request is enough: work that runs under a deadline already (a store call inside a request) runs
/// inline, without a task and a timer of its own (issue 9: a task per store call was measurable on the hot path).
public enum Deadline {
    /// True inside work that a deadline bounds.
    @TaskLocal public static var isBounded = false

    public static func run<T: Sendable>(
        within limit: Duration, onTimeout: @autoclosure @escaping @Sendable () -> any Error = SyncError.unavailable,
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        if isBounded { return try await work() }
        let outcome = Outcome<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                outcome.arm(continuation)
                let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(limit.wholeNanoseconds)) {
                    outcome.finish(.failure(onTimeout()))
                }
                Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await $isBounded.withValue(true) { try await work() }) } catch { result = .failure(error) }
                    timer.cancel()
                    outcome.finish(result)
                }
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }

    /// The first result wins; later ones are dropped.
    private final class Outcome<T: Sendable>: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, early: Result<T, any Error>?, done: Bool)>(
            (nil, nil, false))

        func arm(_ continuation: CheckedContinuation<T, any Error>) {
            let early: Result<T, any Error>? = state.withLock { state in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }

        func finish(_ result: Result<T, any Error>) {
            let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
                guard !state.done else { return nil }
                state.done = true
                guard let continuation = state.continuation else {
                    state.early = result
                    return nil
                }
                state.continuation = nil
                return continuation
            }
            continuation?.resume(with: result)
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
