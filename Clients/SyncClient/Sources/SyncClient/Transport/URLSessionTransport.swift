import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    /// The body as it arrives, from a data task of its own (its delegate hands the pieces over), within the same
    /// request timeout as `send`.
    public func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
        let reader = StreamReader()
        let session = URLSession(configuration: self.session.configuration, delegate: reader, delegateQueue: nil)
        let task = session.dataTask(with: Self.request(call))
        reader.onEnd = { session.finishTasksAndInvalidate() }
        // A consumer that stops reading (a sync that failed midway) closes the connection.
        reader.onTermination { session.invalidateAndCancel() }
        task.resume()
        let status = try await reader.status()
        return HTTPStreamedAnswer(status: status, headers: reader.headers, body: reader.stream)
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
