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
