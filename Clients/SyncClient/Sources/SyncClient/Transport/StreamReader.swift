import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bridges a `URLSession` data task's delegate calls to an async stream of bytes, at most `maximumBytes` of them: past
/// it the task is cancelled and the stream fails with `answer_too_large`, whatever pace its consumer reads at.
final class StreamReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Delegate calls arrive one at a time on the session's queue; the lock guards the hand-over to async callers.
    private let lock = NSLock()
    private var statusContinuation: CheckedContinuation<Int, any Error>?
    private var statusCode: Int?
    private var headerFields: [String: String] = [:]
    private var failure: (any Error)?
    let stream: AsyncThrowingStream<Data, any Error>
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    var onEnd: (@Sendable () -> Void)?
    private let maximumBytes: Int?
    /// Bytes received so far (counted on the delegate queue).
    private var received = 0

    init(maximumBytes: Int? = nil) {
        self.maximumBytes = maximumBytes
        (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self)
        super.init()
    }

    func onTermination(_ body: @escaping @Sendable () -> Void) {
        continuation.onTermination = { _ in body() }
    }

    func status() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            lock.lock()
            if let statusCode {
                lock.unlock()
                continuation.resume(returning: statusCode)
            } else if let failure {
                lock.unlock()
                continuation.resume(throwing: failure)
            } else {
                statusContinuation = continuation
                lock.unlock()
            }
        }
    }

    /// The answer's headers (once `status()` returned).
    var headers: [String: String] { lock.withLock { headerFields } }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let code = (response as? HTTPURLResponse)?.statusCode ?? 0
        var fields: [String: String] = [:]
        for (name, value) in (response as? HTTPURLResponse)?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        lock.lock()
        statusCode = code
        headerFields = fields
        let waiter = statusContinuation
        statusContinuation = nil
        lock.unlock()
        waiter?.resume(returning: code)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = lock.withLock { () -> Int? in
            received += data.count
            guard let maximumBytes, received > maximumBytes else { return nil }
            return statusCode ?? 0
        }
        guard let status = over, let maximumBytes else {
            continuation.yield(data)
            return
        }
        continuation.finish(throwing: SyncClientError.answerTooLarge(status: status, limit: maximumBytes))
        dataTask.cancel()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let waiter = statusContinuation
        statusContinuation = nil
        if statusCode == nil { failure = error ?? SyncClientError.offline("the stream ended before its answer") }
        let failed = failure
        lock.unlock()
        if let waiter, let failed { waiter.resume(throwing: failed) }
        continuation.finish(throwing: error)
        onEnd?()
    }
}
