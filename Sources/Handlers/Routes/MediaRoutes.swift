import HTTPTypes
import Hummingbird
import NIOCore
import SyncAPI

/// `POST /media`, `GET` and `HEAD /media/{sha256}` (protocol §10): uploads streamed to storage, immutable
/// downloads that standard HTTP caches keep for a year, `Range` for video, `If-None-Match` for revalidation.
struct MediaRoutes {
    let media: MediaService

    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "media",
            [
                .post: { request, context in
                    let uploaded = try await media.bounded(by: context.budget).upload(
                        try context.requireSession(), contentType: request.headers[.contentType],
                        declaredLength: request.headers[.contentLength].flatMap(Int64.init), body: request.body)
                    // 201 for a repeat of bytes the family has too (protocol §10): the same URL, stored once.
                    var response = HTTPBodies.response(.created, json: uploaded.json)
                    response.headers[.location] = uploaded.info.url
                    return response
                }
            ])
        group.resource(
            "media/:sha256",
            [
                .get: { request, context in
                    let session = try context.requireSession()
                    let info = try await media.bounded(by: context.budget).info(session, sha256: context.parameters.get("sha256") ?? "")
                    var headers: HTTPFields = [
                        .eTag: "\"\(info.sha256)\"", .cacheControl: "private, max-age=31536000, immutable", .acceptRanges: "bytes",
                        // The type was checked against the bytes' signature; browsers must not guess another.
                        .xContentTypeOptions: "nosniff",
                    ]
                    if let ifNoneMatch = request.headers[.ifNoneMatch],
                        EntityTags.list(ifNoneMatch).contains(where: { $0 == "*" || $0 == "\"\(info.sha256)\"" })
                    {
                        return Response(status: .notModified, headers: headers)
                    }
                    headers[.contentType] = info.contentType
                    let range: Range<Int64>
                    let status: HTTPResponse.Status
                    switch ByteRange.parse(request.headers[.range], size: info.size) {
                    case .whole:
                        range = 0..<info.size
                        status = .ok
                    case .part(let part):
                        range = part
                        status = .partialContent
                        headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(info.size)"
                    case .unsatisfiable:
                        var refusal = Problem(
                            SyncError(.invalidParameter, detail: "The range is outside the \(info.size) bytes.", field: "Range"),
                            status: .rangeNotSatisfiable
                        ).response
                        refusal.headers[.contentRange] = "bytes */\(info.size)"
                        return refusal
                    }
                    headers[.contentLength] = String(range.count)
                    let eventLoop = context.socketEventLoop
                    let body = ResponseBody(contentLength: Int(range.count)) { writer in
                        var pacer = WritePacer(eventLoop: eventLoop)
                        try await media.bounded(by: context.budget).read(session, info, range: range) { piece in
                            try await writer.write(piece)
                            try await pacer.wrote(piece.readableBytes)
                        }
                        try await writer.finish(nil)
                    }
                    return Response(status: status, headers: headers, body: body)
                }
            ])
    }
}

/// A `Range: bytes=…` header (RFC 9110 §14): one range, or the whole when absent, malformed or multiple (which a
/// server may ignore); past the end is unsatisfiable (416).
enum ByteRange: Equatable {
    case whole
    case part(Range<Int64>)
    case unsatisfiable

    static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingPrefix(" ")
        let sides = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard sides.count == 2 else { return .whole }
        // Digits only: `Int64("+5")` and `Int64("-5")` parse, and a range is never signed.
        func number(_ text: Substring) -> Int64? { text.allSatisfy { ("0"..."9").contains($0) } ? Int64(text) : nil }
        let first = sides[0].isEmpty ? nil : number(sides[0])
        let last = sides[1].isEmpty ? nil : number(sides[1])
        switch (first, last) {
        case (nil, let suffix?) where sides[0].isEmpty:
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - suffix)..<size)
        case (let start?, nil) where sides[1].isEmpty:
            return start < size ? .part(start..<size) : .unsatisfiable
        case (let start?, let end?) where start <= end:
            // `end` may be as large as Int64.max: clamp before adding 1, never overflow (a trap kills the process).
            return start < size ? .part(start..<(min(end, size - 1) + 1)) : .unsatisfiable
        default:
            return .whole
        }
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
