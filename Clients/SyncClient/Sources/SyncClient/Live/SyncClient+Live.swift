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
        statusCenter.update {
            $0.live = false
            $0.liveConnected = false
        }
    }

    private func runLive() async {
        var failures = 0
        var lastEventID: String?
        var serverRetry: Duration?
        // Writes made before live mode started (offline, or by another process) go now.
        if (try? pendingOperations().isEmpty) == false { schedulePush(after: .zero) }
        while !Task.isCancelled, isSignedIn {
            do {
                guard let token = session.withLock({ $0?.token }) else { return }
                var headers = ["Authorization": "Bearer \(token)", "Accept": "text/event-stream", "Cache-Control": "no-cache"]
                if let lastEventID { headers["Last-Event-ID"] = lastEventID }
                let date = lastEventID == nil ? dateOfSync : nil
                let path = "/changes" + (date.map { "?date=\(Self.queryEscape($0))" } ?? "")
                let (status, bytes) = try await configuration.transport.stream(HTTPCall(method: "GET", url: url(path), headers: headers))
                if status == 401 {
                    sessionEnded()
                    return
                }
                guard status == 200 else { throw SyncClientError.unavailable(status: status, code: .http(status), retryAfter: nil) }
                failures = 0
                statusCenter.update { $0.liveConnected = true }
                defer { statusCenter.update { $0.liveConnected = false } }
                var parser = ServerEventParser()
                for try await chunk in bytes {
                    let events = parser.feed(chunk)
                    if let retry = parser.retry { serverRetry = .milliseconds(retry) }
                    guard let last = events.last(where: { $0.event == "change" }) else { continue }
                    // Notices in a burst make one sync; a sync already running is joined.
                    try await Task.sleep(for: configuration.liveDebounce)
                    do {
                        try await sync()
                        lastEventID = last.id ?? lastEventID
                    } catch {
                        // Reconnect (after a backoff) from the replica's own date: the server notifies again at once,
                        // so the failed sync is retried.
                        lastEventID = nil
                        throw error
                    }
                }
            } catch {
                if Task.isCancelled { return }
                failures += 1
            }
            let backoff = configuration.retryPolicy.delay(after: min(failures, 8), retryAfter: nil)
            let delay = failures == 0 ? (serverRetry ?? backoff) : max(backoff, serverRetry ?? .zero)
            try? await Task.sleep(for: min(delay, configuration.liveMaximumBackoff))
        }
    }
}
