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
    /// Most bytes of the answer's body the caller takes (nil: no limit), so that a server cannot fill the device's
    /// memory: a transport should stop reading past it and throw (`URLSessionTransport` throws `answer_too_large`).
    /// The SDK sets it on every whole answer (`SyncClientConfiguration.answerMaxBytes`) and checks what it gets anyway.
    public var maximumAnswerBytes: Int?

    /// A call as a transport sends it (a custom transport or a test builds them too).
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil, maximumAnswerBytes: Int? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.maximumAnswerBytes = maximumAnswerBytes
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
/// body in pieces, so the SDK stores it as it downloads and never holds it whole.
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

    /// The whole answer (for a short one: an error), at most `limit` bytes of body: a longer one stops being read and
    /// throws `answer_too_large`.
    public func collected(limit: Int = .max) async throws -> HTTPAnswer {
        var data = Data()
        for try await piece in body {
            guard piece.count <= limit - data.count else { throw SyncClientError.answerTooLarge(status: status, limit: limit) }
            data.append(piece)
        }
        // A cancelled reading ends early without an error: the body is not whole.
        try Task.checkCancellation()
        return HTTPAnswer(status: status, headers: headers, body: data)
    }
}

/// How the SDK reaches the server: injectable, so apps and tests choose the HTTP stack.
public protocol HTTPTransport: Sendable {
    /// One request, one whole answer. Throws only when no answer came (offline, refused, timed out).
    func send(_ call: HTTPCall) async throws -> HTTPAnswer
    /// A long-lived answer read as it arrives (`text/event-stream`): its status, then its bytes in pieces.
    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>)
    /// One request whose answer's body is read as it arrives (the sync group): the SDK stores it as it downloads.
    /// Throws only when no answer came; a body that stops midway fails its stream. The default implementation calls
    /// `send` and hands the whole body as one piece.
    func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer
}

extension HTTPTransport {
    public func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
        HTTPStreamedAnswer(try await send(call))
    }
}
