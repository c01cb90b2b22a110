import Foundation

extension SyncClient {
    /// Keeps `GET /changes` open (protocol §9) and syncs on each notice (debounced, single-flight), reconnecting
    /// with backoff and resuming with `Last-Event-ID`. Call `stopLive()` when the app goes to the background.
    public func startLive() {
        liveTask.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await self.runLive() }
        }
        statusCenter.update { $0.live = true }
    }

    /// Stops live mode and closes its connection.
    public func stopLive() async {
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
                guard status == 200 else { throw SyncClientError.unavailable(status: status, code: "http_\(status)", retryAfter: nil) }
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
