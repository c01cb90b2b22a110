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
            Self.compressible(response.headers[.contentType]), let length = response.body.contentLength, length >= minimumBytes
        else { return response }
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
