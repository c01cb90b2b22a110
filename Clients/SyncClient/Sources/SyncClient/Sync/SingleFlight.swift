/// Runs one sync at a time: a call made while one runs joins it and gets its result.
///
/// The sync runs in a task of its own, since callers share it; when every caller waiting for it is cancelled (a
/// `backgroundSync(within:)` at its limit, a view that went away) the sync is cancelled too, down to its download
/// and the transaction applying it, so nothing outlives the callers that wanted it.
actor SingleFlight {
    /// One sync and how many callers still wait for it.
    final class Flight: Sendable {
        let task: Task<SyncReport, any Error>
        private let waiting = Locked(0)

        init(_ task: Task<SyncReport, any Error>) { self.task = task }

        func join() { waiting.withLock { $0 += 1 } }

        /// One caller stops waiting; true when it was the last.
        func leave() -> Bool {
            waiting.withLock {
                $0 -= 1; return $0 == 0
            }
        }
    }

    private var running: Flight?

    /// Joins the running sync, or starts `work` as the running one.
    func run(_ work: @escaping @Sendable () async throws -> SyncReport) async throws -> SyncReport {
        // A sync cancelled because its callers left is not joined (its answer would be their cancellation): once it
        // has ended, this call starts the next.
        while let dying = running, dying.task.isCancelled { _ = await dying.task.result }
        let flight = running ?? start(work)
        flight.join()
        // Each caller leaves once: by cancellation or at the end, whichever comes first.
        let left = Locked(false)
        let leave: @Sendable () -> Bool = {
            left.withLock { gone in
                defer { gone = true }; return !gone
            } && flight.leave()
        }
        return try await withTaskCancellationHandler {
            defer { _ = leave() }
            return try await flight.task.value
        } onCancel: {
            if leave() { flight.task.cancel() }
        }
    }

    private func start(_ work: @escaping @Sendable () async throws -> SyncReport) -> Flight {
        let flight = Flight(
            Task {
                do {
                    let report = try await work()
                    self.finished()
                    return report
                } catch {
                    self.finished()
                    throw error
                }
            })
        running = flight
        return flight
    }

    /// The running sync ended: the next call starts another.
    private func finished() { running = nil }

    /// Waits for the running sync to end, then runs `work` (which must not start a sync itself).
    func exclusive<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
        if let running { _ = try? await running.task.value }
        return try await work()
    }
}
