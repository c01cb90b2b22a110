import Foundation

/// What a sync in the background did, as the system's background APIs want it (`UIBackgroundFetchResult`).
public enum BackgroundSyncResult: Sendable, Equatable {
    /// The replica moved to a new date of sync, or writes left.
    case newData
    /// Nothing changed on either side.
    case noData
    /// The server could not be reached in time, or refused (the writes stay queued).
    case failed
}

extension SyncClient {
    /// One push and sync within `limit` (a background task or a silent push has about 30 s): what iOS's
    /// `BGAppRefreshTask` handler and `application(_:didReceiveRemoteNotification:)` should run. Past the limit the
    /// sync is cancelled; whatever it had not applied is left as it was (a sync applies all or nothing).
    ///
    /// ```swift
    /// BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.sync", using: nil) { task in
    ///     let work = Task { task.setTaskCompleted(success: await client.backgroundSync() != .failed) }
    ///     task.expirationHandler = { work.cancel() }
    /// }
    /// ```
    public func backgroundSync(within limit: Duration = .seconds(25)) async -> BackgroundSyncResult {
        guard isSignedIn else { return .failed }
        let before = dateOfSync
        guard case .some(.some(let report)) = await Self.first(within: limit, { try? await self.sync() }) else { return .failed }
        return report.pushed > 0 || report.date != before ? .newData : .noData
    }

    /// `work`'s result, or nil once `limit` has passed: `work` is then cancelled (structured: the cancellation reaches
    /// its network calls and its apply) and waited for.
    static func first<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group -> T? in
            group.addTask { await work() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
