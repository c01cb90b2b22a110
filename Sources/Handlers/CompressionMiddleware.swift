import CompressNIO
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// Gzips answers over 1 KiB for clients that send `Accept-Encoding: gzip` (protocol §8): sync answers shrink several
/// times, which matters most on the slow mobile links the product is for.
struct CompressionMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    /// Smaller answers go as they are: gzip would save little and cost a round of work.
    let minimumBytes = 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        guard Self.acceptsGzip(request.headers[.acceptEncoding]), response.headers[.contentEncoding] == nil,
            Self.compressible(response.headers[.contentType])
        else { return response }
        guard let length = response.body.contentLength else {
            // A JSON answer streamed from the database is compressed as it goes (never a live stream of events,
            // which a compressor would hold back).
            guard response.headers[.contentType]?.hasPrefix("application/json") == true else { return response }
            var headers = response.headers
            headers[.contentEncoding] = "gzip"
            headers[.vary] = "Accept-Encoding"
            let body = response.body
            return Response(
                status: response.status, headers: headers,
                body: ResponseBody { writer in try await body.write(try GzipBodyWriter(inner: writer)) })
        }
        guard length >= minimumBytes else { return response }
        let collector = BodyCollector()
        try await response.body.write(collector)
        var plain = ByteBuffer(bytes: collector.bytes.withLock { $0 })
        let compressed = try plain.compress(with: .gzip)
        var headers = response.headers
        headers[.contentEncoding] = "gzip"
        headers[.vary] = "Accept-Encoding"
        headers[.contentLength] = nil
        return Response(status: response.status, headers: headers, body: ResponseBody(byteBuffer: compressed))
    }

    /// JSON and text shrink; media (already compressed, possibly ranged and large) goes as it is.
    static func compressible(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        return contentType.hasPrefix("application/json") || contentType.hasPrefix("application/problem+json")
            || contentType.hasPrefix("text/")
    }

    /// True when an `Accept-Encoding` header accepts gzip (by name or `*`, with a non-zero quality).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        for entry in header.split(separator: ",") {
            let parts = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let name = parts.first, name == "gzip" || name == "*" else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if quality > 0 { return true }
        }
        return false
    }
}

/// Gzips a body as it is written, chunk by chunk, into the writer of the response.
struct GzipBodyWriter: ResponseBodyWriter {
    var inner: any ResponseBodyWriter
    let compressor: any NIOCompressor

    init(inner: any ResponseBodyWriter) throws {
        self.inner = inner
        compressor = CompressionAlgorithm.gzip().compressor
        try compressor.startStream()
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        var input = buffer
        // A sync flush per chunk: each chunk leaves at once, at a small cost in ratio (chunks are about 32 KiB).
        let output = try input.compressStream(with: compressor, flush: .sync)
        try await inner.write(output)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        var empty = ByteBuffer()
        let last = try empty.compressStream(with: compressor, flush: .finish)
        try compressor.finishStream()
        try await inner.write(last)
        try await inner.finish(trailingHeaders)
    }
}

/// Collects a response body written by a route (an answer of known length, to compress it whole).
final class BodyCollector: ResponseBodyWriter, Sendable {
    let bytes = Mutex<[UInt8]>([])

    func write(_ buffer: ByteBuffer) async throws {
        bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
