import Foundation
import Synchronization

extension HangWatch {
    /// How long a test application may take to shut down once its test's body ended (a shutdown takes under a second).
    public static let shutdownLimit: Duration = .seconds(60)

    /// Runs a test application's whole run (`run`: its start, then the test's body through `inBody`, then its
    /// shutdown) as steps named after `name`, and returns what the body returned.
    ///
    /// Why: a clean-clone CI run hung in an application's shutdown after its test's body had passed (HangWatch named
    /// it: `offline(backend:) [postgres]`, 2026-11-26; not reproduced in 500 runs of the same tests since; seen again
    /// the same day in `leavesWhenBack() [postgres]`), and the whole test run waited for it until CI's time was up.
    /// When the shutdown has not ended `shutdownLimit` after the body, its task is cancelled (the application's
    /// services with it) and left behind, the step stays listed for HangWatch, and `abandoned` is told, on the test's
    /// task, so that the test records it.
    public static func application<T: Sendable>(
        _ name: String,
        shutdownLimit: Duration = shutdownLimit,
        abandoned: @Sendable (String) -> Void,
        _ run: @escaping @Sendable (_ inBody: @escaping @Sendable (@Sendable () async throws -> T) async throws -> T) async throws -> T
    ) async throws -> T {
        let whole = begin("\(name): the application's whole run (start, body, shutdown)")
        let starting = begin("\(name): starting the application")
        let tracked = ApplicationRun<T>()
        let task = Task {
            do {
                let value = try await run { inner in
                    end(starting)
                    let outcome: Result<T, any Error>
                    do {
                        outcome = .success(try await step("\(name): the test's body") { try await inner() })
                    } catch {
                        outcome = .failure(error)
                    }
                    tracked.bodyEnded(outcome, name: name, limit: shutdownLimit)
                    return try outcome.get()
                }
                tracked.finish(.success(value))
            } catch {
                tracked.finish(.failure(error))
            }
        }
        tracked.task.withLock { $0 = task }
        let (outcome, gaveUp) = await withTaskCancellationHandler {
            await tracked.outcome()
        } onCancel: {
            task.cancel()
        }
        end(starting)
        if let gaveUp {
            abandoned(gaveUp)
        } else {
            end(whole)
        }
        return try outcome.get()
    }
}

/// One application run of `HangWatch.application`: its outcome, from its end or from its body's when its shutdown
/// outlived `shutdownLimit`.
private final class ApplicationRun<T: Sendable>: Sendable {
    private struct State {
        var outcome: Result<T, any Error>?
        var gaveUp: String?
        var waiter: CheckedContinuation<(Result<T, any Error>, String?), Never>?
    }
    private let state = Mutex(State())
    let task = Mutex<Task<Void, Never>?>(nil)

    /// The body ended with `outcome`: the shutdown starts, with `limit` to end.
    func bodyEnded(_ outcome: Result<T, any Error>, name: String, limit: Duration) {
        Task {
            try? await Task.sleep(for: limit)
            let message = "\(name): the application's shutdown had not ended \(limit) after the test's body; cancelled and left behind"
            let resumed = state.withLock { state -> Bool in
                guard state.outcome == nil else { return false }
                state.outcome = outcome
                state.gaveUp = message
                return true
            }
            guard resumed else { return }
            FileHandle.standardError.write(Data("HangWatch: \(message)\n".utf8))
            task.withLock { $0 }?.cancel()
            resume()
        }
    }

    func finish(_ outcome: Result<T, any Error>) {
        let first = state.withLock { state -> Bool in
            guard state.outcome == nil else { return false }
            state.outcome = outcome
            return true
        }
        if first { resume() }
    }

    func outcome() async -> (Result<T, any Error>, String?) {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> (Result<T, any Error>, String?)? in
                guard let outcome = state.outcome else {
                    state.waiter = continuation
                    return nil
                }
                return (outcome, state.gaveUp)
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func resume() {
        let (waiter, ready) = state.withLock {
            state -> (CheckedContinuation<(Result<T, any Error>, String?), Never>?, (Result<T, any Error>, String?)?) in
            defer { state.waiter = nil }
            return (state.waiter, state.outcome.map { ($0, state.gaveUp) })
        }
        if let waiter, let ready { waiter.resume(returning: ready) }
    }
}
