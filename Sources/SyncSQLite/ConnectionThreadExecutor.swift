import Foundation
import SyncAPI

/// Runs `async` code to its end on the calling thread: inside a GRDB access closure, so that the orchestration written
/// once for both backends (which is `async`, as PostgreSQL's statements are) can use a GRDB `Database`.
///
/// GRDB lends a connection only inside a synchronous closure on the connection's own queue, and the connection must not
/// be used anywhere else. `run` starts the code as a task that prefers this executor, then runs the task's jobs right
/// here until it ends: SQLite's statements (synchronous) execute on the connection's queue as GRDB requires, with no
/// thread hop per statement. The thread is held for the whole call, as it is for any GRDB access.
final class ConnectionThreadExecutor<T: Sendable>: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var result: Result<T, any Error>?

    private init() {}

    /// Runs `body` to its end on this thread and returns what it returned (or throws what it threw).
    static func run(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let executor = ConnectionThreadExecutor()
        Task(executorPreference: executor) {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            executor.finish(result)
        }
        return try executor.runJobs().get()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func finish(_ result: Result<T, any Error>) {
        condition.lock()
        self.result = result
        condition.signal()
        condition.unlock()
    }

    /// Runs the task's jobs as they come until the task has finished; the job that finishes it ends here too.
    private func runJobs() -> Result<T, any Error> {
        condition.lock()
        while true {
            if let result {
                condition.unlock()
                return result
            }
            if jobs.isEmpty {
                condition.wait()
                continue
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            condition.lock()
        }
    }
}
