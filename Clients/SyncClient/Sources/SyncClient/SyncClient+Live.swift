import Foundation

extension SyncClient {
    /// Keeps `GET /changes` open (protocol §9) and syncs on each notice (debounced, single-flight); reconnects with
    /// backoff, resuming with `Last-Event-ID`. Stops with `stopLive()` (call it when the app goes to the background).
    public func startLive() {
        liveTask.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await self.runLive() }
        }
        statusCenter.update { $0.live = true }
    }

    public func stopLive() async {
        let task = liveTask.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        statusCenter.update {
            $0.live = false
            $0.liveConnected = false
        }
    }

    private func runLive() async {
        var failures = 0
        var lastEventID: String?
        while !Task.isCancelled, isSignedIn {
            do {
                guard let token = session.withLock({ $0?.token }) else { return }
                var headers = ["Authorization": "Bearer \(token)", "Accept": "text/event-stream"]
                if let lastEventID { headers["Last-Event-ID"] = lastEventID }
                let date = lastEventID == nil ? dateOfSync : nil
                let path = "/changes" + (date.map { "?date=\(Self.queryEscape($0))" } ?? "")
                let (status, bytes) = try await configuration.transport.stream(HTTPCall(method: "GET", url: url(path), headers: headers))
                if status == 401 {
                    sessionEnded()
                    return
                }
                guard status == 200 else { throw SyncClientError.server(status: status, code: "http_\(status)", detail: "") }
                failures = 0
                statusCenter.update { $0.liveConnected = true }
                defer { statusCenter.update { $0.liveConnected = false } }
                var parser = ServerEventParser()
                for try await chunk in bytes {
                    for event in parser.feed(chunk) where event.event == "change" {
                        lastEventID = event.id
                        try await Task.sleep(for: configuration.liveDebounce)
                        _ = try? await sync()
                    }
                }
            } catch {
                if Task.isCancelled { return }
                failures += 1
            }
            let delay = configuration.retryPolicy.delay(after: min(failures, 6), retryAfter: nil)
            try? await Task.sleep(for: min(delay, .seconds(30)))
        }
    }
}
