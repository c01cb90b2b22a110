import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP call of the SDK, independent of any HTTP library.
public struct HTTPCall: Sendable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What the server answered.
public struct HTTPAnswer: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    var json: JSONValue? { try? JSONValue.parse(body) }
}

/// How the SDK reaches the server: injectable, so apps and tests choose the HTTP stack.
public protocol HTTPTransport: Sendable {
    /// One request, one whole answer. Throws only when no answer came (offline, refused, timed out).
    func send(_ call: HTTPCall) async throws -> HTTPAnswer
    /// A long-lived answer read as it arrives (`text/event-stream`): its status, then its bytes in pieces.
    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>)
}

/// The default transport: `URLSession`, on Apple platforms and on Linux (FoundationNetworking).
public final class URLSessionTransport: HTTPTransport {
    let session: URLSession

    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    static func request(_ call: HTTPCall) -> URLRequest {
        var request = URLRequest(url: call.url)
        request.httpMethod = call.method
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = call.body
        return request
    }

    public func send(_ call: HTTPCall) async throws -> HTTPAnswer {
        let (data, response) = try await session.data(for: Self.request(call))
        guard let http = response as? HTTPURLResponse else { throw SyncClientError.offline("no HTTP answer") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return HTTPAnswer(status: http.statusCode, headers: headers, body: data)
    }

    public func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        let reader = StreamReader()
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

/// Bridges a `URLSession` data task's delegate calls to an async stream of bytes.
final class StreamReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Delegate calls arrive one at a time on the session's queue; the lock guards the hand-over to async callers.
    private let lock = NSLock()
    private var statusContinuation: CheckedContinuation<Int, any Error>?
    private var statusCode: Int?
    private var failure: (any Error)?
    let stream: AsyncThrowingStream<Data, any Error>
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    var onEnd: (@Sendable () -> Void)?

    override init() {
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

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let code = (response as? HTTPURLResponse)?.statusCode ?? 0
        lock.lock()
        statusCode = code
        let waiter = statusContinuation
        statusContinuation = nil
        lock.unlock()
        waiter?.resume(returning: code)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation.yield(data)
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
