import SyncAPI
import Synchronization

/// A time limit on one call to a standby, independent of the request's deadline (a nested `Deadline.run` is not
/// bounded again): a standby that hangs must leave time for the primary to answer the same read.
enum StandbyTimeout {
    /// Why a standby call was given up.
    struct Expired: Error {}

    /// Runs `work` in a task of its own and answers its result, or throws `Expired` after `limit` (the work is then
    /// cancelled and its late result dropped).
    ///
    /// The timer is `timers`', cancelled when the work ends. A cancelled `Task.sleep` stays queued in the
    /// runtime until its own deadline: one per read would hold its memory for the whole limit (`PoolTimerTests`).
    static func run<T: Sendable>(within limit: Duration, timers: TimerWheel, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = Race<T>()
        let alarm = Deadline.Alarm(wheel: timers)
        defer {
            alarm.stop()
            race.cancelAll()
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.arm(continuation)
                race.add(
                    Task {
                        do { race.finish(.success(try await work())) } catch { race.finish(.failure(error)) }
                        alarm.stop()
                    })
                alarm.set(in: limit) { race.finish(.failure(Expired())) }
            }
        } onCancel: {
            alarm.stop()
            race.cancelAll()
        }
    }

    /// The first of the work and the timer to finish resumes the caller; the work is cancelled when it loses.
    private final class Race<T: Sendable>: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, tasks: [Task<Void, Never>])>((nil, []))

        func arm(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.continuation = continuation } }

        func add(_ task: Task<Void, Never>) { state.withLock { $0.tasks.append(task) } }

        func finish(_ result: Result<T, any Error>) {
            let continuation = state.withLock { state in
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(with: result)
        }

        func cancelAll() {
            for task in state.withLock({ $0.tasks }) { task.cancel() }
        }
    }
}
