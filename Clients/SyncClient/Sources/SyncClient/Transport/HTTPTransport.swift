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

/// An answer whose body is read as it arrives (a sync answer of 100,000 items): status and headers first, then the
/// body in pieces, so the SDK applies it while it downloads and never holds it whole.
public struct HTTPStreamedAnswer: Sendable {
    public var status: Int
    public var headers: [String: String]
    /// The body's bytes in pieces; it fails when the download does (the connection dropped mid-answer).
    public var body: AsyncThrowingStream<Data, any Error>

    public init(status: Int, headers: [String: String], body: AsyncThrowingStream<Data, any Error>) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// An answer already whole, handed as one piece.
    public init(_ answer: HTTPAnswer) {
        self.init(
            status: answer.status, headers: answer.headers,
            body: AsyncThrowingStream { continuation in
                continuation.yield(answer.body)
                continuation.finish()
            })
    }

    /// The whole answer (for a short one: an error).
    public func collected() async throws -> HTTPAnswer {
        var data = Data()
        for try await piece in body { data.append(piece) }
        return HTTPAnswer(status: status, headers: headers, body: data)
    }
}

/// How the SDK reaches the server: injectable, so apps and tests choose the HTTP stack.
public protocol HTTPTransport: Sendable {
    /// One request, one whole answer. Throws only when no answer came (offline, refused, timed out).
    func send(_ call: HTTPCall) async throws -> HTTPAnswer
    /// A long-lived answer read as it arrives (`text/event-stream`): its status, then its bytes in pieces.
    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>)
    /// One request whose answer's body is read as it arrives (the sync group): the SDK applies it while it downloads.
    /// Throws only when no answer came; a body that stops midway fails its stream. The default implementation calls
    /// `send` and hands the whole body as one piece.
    func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer
}

extension HTTPTransport {
    public func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
        HTTPStreamedAnswer(try await send(call))
    }
}
