import ServiceLifecycle
import Synchronization

/// Where the producers of streamed answers run (`AnswerStream.produce`). A producer outlives the request that starts
/// it (its answer is written after the handler returned), so it runs as a child task of this service's task group
/// rather than as a task of its own: nothing of an answer outlives the application, and stopping the service stops
/// every producer (its snapshot ends with it).
///
/// It stops after the server (a service group stops its services in reverse order): it then takes no new producer
/// (their answers end 503 `unavailable`) and cancels those still running, whose answers nobody is left to read.
public final class AnswerProducers: Service, Sendable {
    /// A producer waiting for its task.
    struct Job: Sendable {
        let run: @Sendable () async -> Void
        let refused: @Sendable () -> Void
    }

    private struct State {
        var pending: [Job] = []
        var waiter: CheckedContinuation<Job?, Never>?
        var stopped = false
    }

    private let state = Mutex(State())

    public init() {}

    public func run() async {
        await withDiscardingTaskGroup { group in
            await withTaskCancellationHandler {
                await withGracefulShutdownHandler {
                    while let job = await next() { group.addTask { await job.run() } }
                    // The server has stopped by now: an answer still being produced has nobody left to read it.
                    group.cancelAll()
                } onGracefulShutdown: {
                    self.stop()
                }
            } onCancel: {
                self.stop()
            }
        }
    }

    /// Starts `run` as a child of the service, or calls `refused` when the service has stopped.
    func start(_ run: @escaping @Sendable () async -> Void, refused: @escaping @Sendable () -> Void) {
        let job = Job(run: run, refused: refused)
        enum Outcome {
            case handed(CheckedContinuation<Job?, Never>)
            case queued
            case refused
        }
        let outcome = state.withLock { state -> Outcome in
            if state.stopped { return .refused }
            if let waiter = state.waiter {
                state.waiter = nil
                return .handed(waiter)
            }
            state.pending.append(job)
            return .queued
        }
        switch outcome {
        case .handed(let waiter): waiter.resume(returning: job)
        case .queued: break
        case .refused: refused()
        }
    }

    /// The next producer to start; nil once the service stops.
    private func next() async -> Job? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Job?, Never>) in
            let ready: Job?? = state.withLock { state in
                if state.stopped { return .some(nil) }
                if !state.pending.isEmpty { return .some(state.pending.removeFirst()) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Takes no producer from now on: those not started yet are refused.
    private func stop() {
        let (waiter, refused) = state.withLock { state in
            state.stopped = true
            defer {
                state.waiter = nil
                state.pending = []
            }
            return (state.waiter, state.pending)
        }
        waiter?.resume(returning: nil)
        for job in refused { job.refused() }
    }
}
