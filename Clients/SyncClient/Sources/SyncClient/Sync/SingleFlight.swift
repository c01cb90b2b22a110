/// Runs one sync at a time: a call made while one runs joins it and gets its result.
actor SingleFlight {
    private var running: Task<SyncReport, any Error>?

    /// Joins the running sync, or starts `work` as the running one.
    func run(_ work: @escaping @Sendable () async throws -> SyncReport) async throws -> SyncReport {
        if let running { return try await running.value }
        let task = Task { try await work() }
        running = task
        defer { running = nil }
        return try await task.value
    }

    /// Waits for the running sync to end, then runs `work` (which must not start a sync itself).
    func exclusive<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
        if let running { _ = try? await running.value }
        return try await work()
    }
}
