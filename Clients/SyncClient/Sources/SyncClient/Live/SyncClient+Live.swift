import Foundation

extension SyncClient {
    /// Keeps `GET /changes` open (protocol §9) and syncs on each notice (debounced, single-flight), reconnecting
    /// with backoff and resuming with `Last-Event-ID`; unsent writes are pushed as it starts. Call `stopLive()` when
    /// the app goes to the background. Asked for while signed out, or ended by a lost session (a 401), live mode
    /// starts again by itself at the next sign-in: `status.live` tells whether it runs now.
    public func startLive() {
        liveWanted.withLock { $0 = true }
        resumeLive()
    }

    /// Starts the live loop when it is wanted, signed in and not running.
    func resumeLive() {
        guard liveWanted.withLock({ $0 }), isSignedIn else { return }
        let started = liveTask.withLock { task -> Bool in
            guard task == nil else { return false }
            task = Task { [self] in
                await self.runLive()
                // Ended by itself (signed out, a 401): forget the task so that the next start runs again.
                if !Task.isCancelled { self.liveEnded() }
            }
            return true
        }
        if started { statusCenter.update { $0.live = true } }
    }

    private func liveEnded() {
        liveTask.withLock { $0 = nil }
        statusCenter.update {
            $0.live = false
            $0.liveConnected = false
        }
    }

    /// Stops live mode and closes its connection.
    public func stopLive() async {
        liveWanted.withLock { $0 = false }
        let task = liveTask.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
        // Unless live mode was started again meanwhile (its status is its own).
        guard liveTask.withLock({ $0 == nil }) else { return }
        statusCenter.update {
            $0.live = false
            $0.liveConnected = false
        }
    }

    private func runLive() async {
        var lastEventID: String?
        // Writes made before live mode started (offline, or by another process) go now.
        if (try? pendingOperations().isEmpty) == false { schedulePush(after: .zero) }
        // A space-bound client's stream refused for good (404: the account left the space, or the space is gone) is
        // answered by a sync: it erases the replica when the account no longer lists the space (`spaceRemoval`), and
        // live mode ends; any other refusal is retried after a sync and a backoff.
        var refusals = 0
        while case .refused = await followLiveStream(lastEventID: &lastEventID) {
            do {
                _ = try await sync()
            } catch SyncClientError.spaceRemoved(_) {
                return
            } catch {}
            refusals += 1
            try? await Task.sleep(
                for: min(configuration.retryPolicy.delay(after: min(refusals, 8), retryAfter: nil), configuration.liveMaximumBackoff))
        }
    }

    /// One run of live mode's stream loop, until it is cancelled, signed out or (for a space-bound client) refused.
    private func followLiveStream(lastEventID: inout String?) async -> EventStreamEnd {
        await followEventStream(
            refusalEnds: configuration.space != nil,
            request: {
                let date = lastEventID == nil ? dateOfSync : nil
                let path = "/changes" + (date.map { "?date=\(Self.queryEscape($0))" } ?? "")
                return (url(path), lastEventID.map { ["Last-Event-ID": $0] } ?? [:])
            },
            connected: { connected in statusCenter.update { $0.liveConnected = connected } }
        ) { events in
            guard let last = events.last(where: { $0.event == "change" }) else { return }
            // Notices in a burst make one sync; a sync already running is joined.
            try await Task.sleep(for: configuration.liveDebounce)
            do {
                try await sync()
                lastEventID = last.id ?? lastEventID
            } catch {
                // Reconnect (after a backoff) from the replica's own date: the server notifies again at once, so the
                // failed sync is retried.
                lastEventID = nil
                throw error
            }
        }
    }
}
