import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: `URLSession`, on Apple platforms and on Linux (FoundationNetworking).
public final class URLSessionTransport: HTTPTransport {
    let session: URLSession
    /// Hands each task of `session` its reader (`send` reads its answer as it arrives, to stop at its limit).
    private let router = TaskRouter()

    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    deinit { session.finishTasksAndInvalidate() }

    static func request(_ call: HTTPCall) -> URLRequest {
        var request = URLRequest(url: call.url)
        request.httpMethod = call.method
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = call.body
        return request
    }

    /// One call on the shared session (its connections are reused), the answer read as it arrives: past
    /// `call.maximumAnswerBytes` the call is cancelled and throws `answer_too_large`, so that an answer never fills
    /// memory.
    public func send(_ call: HTTPCall) async throws -> HTTPAnswer {
        let reader = StreamReader(maximumBytes: call.maximumAnswerBytes)
        let task = session.dataTask(with: Self.request(call))
        router.add(reader, for: task)
        // A cancelled caller cancels the task (an answer over the limit cancels it by itself).
        return try await withTaskCancellationHandler {
            task.resume()
            let status = try await reader.status()
            var body = Data()
            for try await piece in reader.stream { body.append(piece) }
            // A cancelled reading ends early without an error: the body is not whole.
            try Task.checkCancellation()
            return HTTPAnswer(status: status, headers: reader.headers, body: body)
        } onCancel: {
            task.cancel()
        }
    }

    /// The body as it arrives (the task's reader hands the pieces over), within the same request timeout as `send`;
    /// at most `call.maximumAnswerBytes` of it (nil: no limit). On the shared session, like `send`: a sync reuses the
    /// connection of the calls before it instead of opening one (and on `https`, a TLS handshake) of its own.
    public func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
        let reader = StreamReader(maximumBytes: call.maximumAnswerBytes)
        let task = session.dataTask(with: Self.request(call))
        router.add(reader, for: task)
        // A consumer that stops reading (a sync that failed midway) cancels the task, which closes its connection.
        reader.onTermination { task.cancel() }
        task.resume()
        let status = try await reader.status()
        return HTTPStreamedAnswer(status: status, headers: reader.headers, body: reader.stream)
    }

    public func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        let reader = StreamReader(maximumBytes: call.maximumAnswerBytes)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 120
        let session = URLSession(configuration: configuration, delegate: reader, delegateQueue: nil)
        let task = session.dataTask(with: Self.request(call))
        reader.onEnd = { session.invalidateAndCancel() }
        // A consumer that stops reading (live mode stopped) closes the connection.
        reader.onTermination { session.invalidateAndCancel() }
        task.resume()
        let status = try await reader.status()
        let stream = reader.stream
        return (status, stream)
    }
}

/// The delegate of a session shared by many tasks: it passes each task's calls to the reader registered for it.
final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var readers: [Int: StreamReader] = [:]

    /// Registers `reader` for `task`, before the task is resumed.
    func add(_ reader: StreamReader, for task: URLSessionTask) {
        lock.withLock { readers[task.taskIdentifier] = reader }
    }

    private func reader(_ task: URLSessionTask) -> StreamReader? {
        lock.withLock { readers[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let reader = reader(dataTask) else { return completionHandler(.cancel) }
        reader.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        reader(dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let reader = lock.withLock { readers.removeValue(forKey: task.taskIdentifier) }
        reader?.urlSession(session, task: task, didCompleteWithError: error)
    }
}
