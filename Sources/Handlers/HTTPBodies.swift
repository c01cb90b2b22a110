import Hummingbird
import NIOCore
import SyncAPI

/// Reading JSON request bodies and writing JSON answers, shared by every route.
enum HTTPBodies {
    /// Collects at most `limit` bytes (413 `payload_too_large` past it) and parses them strictly (400 `invalid_json`).
    static func json(_ request: Request, limit: Int) async throws -> JSONValue {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw SyncError.payloadTooLarge(limit: limit)
        }
        var request = request
        let buffer = try await request.collectBody(upTo: limit)
        guard buffer.readableBytes > 0 else { throw SyncError.invalidJSON("The body is empty; a JSON object is expected.") }
        do {
            return try JSONParser.parse(buffer.readableBytesView)
        } catch {
            throw SyncError.invalidJSON("The body is not valid JSON: \(error).")
        }
    }

    /// A JSON answer.
    static func response(_ status: HTTPResponse.Status = .ok, json: some Collection<UInt8>, etag: String? = nil) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let etag { headers[.eTag] = etag }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// A JSON answer streamed chunk by chunk as the database cursor moves (no `Content-Length`: chunked on HTTP/1.1).
    /// A client that goes away stops the read; a read that fails half-way ends the connection, so the client sees
    /// a broken answer, never a short one that parses.
    static func response(json stream: AnswerStream, etag: String? = nil) -> Response {
        // A response dropped unwritten (answered 503 by the time limit instead, or its connection gone) cancels its
        // stream at once, so the snapshot and the budget place it holds come back now, not after the stall limit.
        let dropped = CancelOnRelease(stream)
        let body = ResponseBody { writer in
            _ = dropped
            do {
                while let chunk = try await stream.next() { try await writer.write(chunk) }
            } catch {
                stream.cancel()
                throw error
            }
            try await writer.finish(nil)
        }
        var headers: HTTPFields = [.contentType: "application/json"]
        if let etag { headers[.eTag] = etag }
        return Response(status: .ok, headers: headers, body: body)
    }

    static func response(_ status: HTTPResponse.Status = .ok, json: String, etag: String? = nil) -> Response {
        response(status, json: Array(json.utf8), etag: etag)
    }

    /// 304 with the entity tag and no body.
    static func notModified(etag: String) -> Response {
        Response(status: .notModified, headers: [.eTag: etag])
    }
}

extension RouterMethods {
    /// Registers `handlers` on `path` and answers 405 `method_not_allowed`, with an `Allow` header naming the
    /// methods the path takes (RFC 9110 §15.5.6), for every other method. `HEAD` runs the `GET` handler and drops
    /// its body, unless `headFromGet` is false (a live stream, whose body would never run its clean-up).
    func resource(
        _ path: RouterPath, headFromGet: Bool = true,
        _ handlers: [HTTPRequest.Method: @Sendable (Request, Context) async throws -> Response]
    ) {
        var allow = handlers.keys.map(\.rawValue)
        if headFromGet, handlers[.get] != nil { allow.append("HEAD") }
        allow.sort()
        let refusal = SyncError.methodNotAllowed(allow: allow)
        for method in HTTPMethods.routed {
            if let handler = handlers[method] {
                on(path, method: method, use: handler)
            } else if method == .head, headFromGet, let get = handlers[.get] {
                on(path, method: .head) { request, context in
                    let response = try await get(request, context)
                    return Response(status: response.status, headers: response.headers)
                }
            } else {
                on(path, method: method) { _, _ -> Response in throw refusal }
            }
        }
    }
}

/// The methods every resource answers (405 with `Allow` for those it does not take).
enum HTTPMethods {
    static let routed: [HTTPRequest.Method] = [.get, .head, .put, .post, .delete, .patch, .options, .trace]
}

/// Keeps a long answer's writes (a media download) from piling up in memory. `ResponseBodyWriter.write` returns once
/// the bytes are queued for the connection's event loop, which learns only later that the socket is full; a producer
/// faster than the event loop (a file read on a busy machine) would queue a whole 100 MB answer. Every MiB the pacer
/// waits until the event loop has handed the queued writes to the channel: then a full socket holds the next write back.
struct WritePacer {
    let eventLoop: (any EventLoop)?
    private var queued = 0
    /// Bytes written between two waits.
    static let interval = 1 << 20

    init(eventLoop: (any EventLoop)?) { self.eventLoop = eventLoop }

    /// Counts `bytes` just written; waits on the event loop once a MiB has been queued since the last wait.
    mutating func wrote(_ bytes: Int) async throws {
        queued += bytes
        guard queued >= Self.interval, let eventLoop else { return }
        queued = 0
        try await eventLoop.submit {}.get()
    }
}

/// Cancels an answer stream when the last reference to it goes (its response body was written or dropped).
final class CancelOnRelease: Sendable {
    let stream: AnswerStream
    init(_ stream: AnswerStream) { self.stream = stream }
    deinit { stream.cancel() }
}
