import Foundation

extension SyncClient {
    /// Pushes the queue `delay` from now (default `configuration.pushDelay`), single-flight with `sync()`: a write
    /// in a burst joins the push already waiting. While the server is unreachable (network, 429, 503) the push is
    /// retried with backoff until the queue is empty, so a write made offline leaves when the network returns. A
    /// permanent refusal lands in `failedOperations()` as with `push()`; a lost session stops it (sign-in resumes it).
    func schedulePush(after delay: Duration? = nil) {
        guard let wait = delay ?? configuration.pushDelay, isSignedIn else { return }
        pushTask.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in
                try? await Task.sleep(for: wait)
                await self.pushUntilEmpty()
                self.pushTask.withLock { $0 = nil }
                // A write that came while the last pass ran, after it read the queue: one more pass.
                if !Task.isCancelled, (try? self.pendingOperations().isEmpty) == false { self.schedulePush() }
            }
        }
    }

    /// Cancels a push that waits or runs (sign-out); what it did not push stays queued.
    func cancelScheduledPush() async {
        let task = pushTask.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }

    private func pushUntilEmpty() async {
        var failures = 0
        while !Task.isCancelled, isSignedIn, (try? pendingOperations().isEmpty) == false {
            do {
                // Joins a running sync (which pushes first) rather than racing it.
                _ = try await flight.run { try await self.pushQueue() }
                // The server is back: the status says so (a sync that ran meanwhile said it already).
                statusCenter.update {
                    if $0.state == .offline { $0.state = .idle }
                    if $0.lastError?.isTransient == true { $0.lastError = nil }
                }
                return
            } catch let error as SyncClientError where error.isTransient {
                failures += 1
                statusCenter.update { $0.state = .offline }
                let delay = configuration.retryPolicy.delay(after: min(failures, 8), retryAfter: error.retryAfter)
                try? await Task.sleep(for: min(delay, configuration.liveMaximumBackoff))
            } catch {
                // A lost session or a refusal of the whole push: said in the status; sign-in or the next write retries.
                statusCenter.update { $0.lastError = SyncClientError.wrapping(error) }
                return
            }
        }
    }
}
