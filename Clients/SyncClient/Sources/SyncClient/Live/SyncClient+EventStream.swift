import Foundation
import Logging

/// How `followEventStream` ended.
enum EventStreamEnd: Sendable {
    /// The task was cancelled.
    case cancelled
    /// The session is gone: a 401 ended it, or the app signed out.
    case signedOut
    /// The server refused the stream for good (a 4xx other than 401, 408 and 429), when asked to stop there.
    case refused(SyncClientError)
}

extension SyncClient {
    /// Keeps one of the server's event streams open while signed in (protocol §9): live mode's `GET /changes` and the
    /// all-spaces stream (§15) share it. Each connection asks `request` for its URL and extra headers, then hands the
    /// events of each piece that arrives to `handle`. The stream is opened again when it ends or fails: after the
    /// server's `retry:` hint when it ended by itself, else with the retry policy's backoff (never shorter than the
    /// hint), at least `minimumReconnectDelay` and at most `liveMaximumBackoff` either way. `handle` throwing counts as a failed connection. A 401 ends the
    /// session (`sessionEnded()`) and the loop. A refusal is retried like a failure unless `refusalEnds`.
    func followEventStream(
        refusalEnds: Bool = false,
        request: () -> (url: URL, headers: [String: String]),
        connected: (Bool) -> Void = { _ in },
        handle: ([ServerEvent]) async throws -> Void
    ) async -> EventStreamEnd {
        var failures = 0
        var serverRetry: Duration?
        while !Task.isCancelled {
            guard let token = session.withLock({ $0?.token }) else { return .signedOut }
            do {
                let (url, extra) = request()
                let headers = extra.merging(["Authorization": "Bearer \(token)", "Accept": "text/event-stream", "Cache-Control": "no-cache"]) {
                    _, standard in standard
                }
                let (status, bytes) = try await configuration.transport.stream(HTTPCall(method: "GET", url: url, headers: headers))
                if status == 401 {
                    sessionEnded()
                    return .signedOut
                }
                if refusalEnds, (400..<500).contains(status), ![408, 429].contains(status) {
                    return .refused(SyncClientError.from(HTTPAnswer(status: status, headers: [:], body: try await Self.prefix(of: bytes))))
                }
                guard status == 200 else { throw SyncClientError.unavailable(status: status, code: .http(status), retryAfter: nil) }
                failures = 0
                log.live.info("stream connected", metadata: ["path": "\(url.path)"])
                connected(true)
                defer { connected(false) }
                var parser = ServerEventParser()
                for try await chunk in bytes {
                    // A line or an event over the parser's limit throws: the connection is dropped and opened again.
                    let events = try parser.feed(chunk)
                    if let retry = parser.retry { serverRetry = .milliseconds(retry) }
                    if !events.isEmpty { try await handle(events) }
                }
                log.live.info("stream ended by the server")
            } catch {
                if Task.isCancelled { return .cancelled }
                failures += 1
                log.live.notice(
                    "stream dropped", metadata: SyncClientError.wrapping(error).logMetadata.merging(["failures": "\(failures)"]) { a, _ in a })
            }
            let backoff = configuration.retryPolicy.delay(after: min(failures, 8), retryAfter: nil)
            try? await Task.sleep(
                for: Self.reconnectDelay(failures: failures, serverRetry: serverRetry, backoff: backoff, maximum: configuration.liveMaximumBackoff))
        }
        return .cancelled
    }

    /// The shortest wait before an event stream is opened again, whatever the server's `retry:` says: a server or a
    /// proxy that answers 200 and closes at once, with `retry: 0`, would otherwise be called again and again with no
    /// pause, at the cost of the phone's battery and the server's load.
    static let minimumReconnectDelay: Duration = .seconds(1)

    /// How long to wait before the stream is opened again: after a stream the server ended, its `retry:` hint (the
    /// backoff when it gave none); after failures, the backoff, never shorter than the hint; never shorter than
    /// `minimumReconnectDelay`, never longer than `maximum`.
    static func reconnectDelay(failures: Int, serverRetry: Duration?, backoff: Duration, maximum: Duration) -> Duration {
        let delay = failures == 0 ? (serverRetry ?? backoff) : max(backoff, serverRetry ?? .zero)
        return min(max(delay, minimumReconnectDelay), max(maximum, minimumReconnectDelay))
    }

    /// The first bytes of a refusal's body (its problem details), at most `limit`.
    private static func prefix(of bytes: AsyncThrowingStream<Data, any Error>, limit: Int = 64 * 1024) async throws -> Data {
        var body = Data()
        for try await chunk in bytes {
            body.append(chunk.prefix(limit - body.count))
            if body.count >= limit { break }
        }
        return body
    }
}
