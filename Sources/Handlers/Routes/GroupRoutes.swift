import Hummingbird
import NIOCore
import SyncAPI
import Synchronization

/// `POST /group` (protocol §6): many calls in one round trip. Each sub-request goes through the same router,
/// middleware and engine as a direct call; runs of consecutive reads are answered from one database snapshot.
/// What a sub-request may reach is decided on its resolved route (`GroupReachMiddleware`); the whole group is
/// answered within the request time limit like any request.
struct GroupRoutes {
    let store: any SyncStore
    let bodyMaxBytes: Int
    let maxRequests: Int
    /// The router's own responder, set once every route is registered.
    let responder: ResponderBox

    /// One sub-request as the client sent it.
    struct SubRequest {
        let id: String
        let method: HTTPRequest.Method?
        let url: String?
        let body: JSONValue?
        let headers: [(String, String)]
    }

    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "group",
            [
                .post: { request, context in
                    let subRequests = try Self.parse(try await HTTPBodies.json(request, limit: bodyMaxBytes), maxRequests: maxRequests)
                    let authorization = request.headers[.authorization]
                    var answers: [[UInt8]] = []
                    var index = 0
                    while index < subRequests.count {
                        // A run of reads shares one snapshot; each write runs alone, so later reads see it.
                        var end = index + 1
                        if subRequests[index].method == .get {
                            while end < subRequests.count, subRequests[end].method == .get { end += 1 }
                        }
                        let run = Array(subRequests[index..<end])
                        let subContext = context
                        let answered: [[UInt8]]
                        if run.count > 1 {
                            answered = try await store.withReadSnapshot {
                                var out: [[UInt8]] = []
                                for sub in run { out.append(try await self.answer(sub, authorization: authorization, context: subContext)) }
                                return out
                            }
                        } else {
                            answered = [try await answer(run[0], authorization: authorization, context: subContext)]
                        }
                        answers += answered
                        index = end
                    }
                    var writer = JSONWriter(capacity: answers.reduce(32) { $0 + $1.count + 1 })
                    writer.raw("{\"responses\":[")
                    for (n, answer) in answers.enumerated() {
                        if n > 0 { writer.raw(",") }
                        writer.raw(bytes: answer)
                    }
                    writer.raw("]}")
                    return HTTPBodies.response(json: writer.bytes)
                }
            ])
    }

    /// Checks the envelope: 400 `invalid_group` for the whole group when it is not a list of 1 to `maxRequests`
    /// objects with unique, non-empty string ids.
    static func parse(_ json: JSONValue, maxRequests: Int) throws -> [SubRequest] {
        func invalid(_ detail: String) -> SyncError { SyncError(code: "invalid_group", status: 400, detail: detail, field: "requests") }
        guard case .object(let members) = json, members.allSatisfy({ $0.key == "requests" }),
            case .array(let requests)? = json["requests"]
        else { throw invalid("The body must be {\"requests\": [ … ]}.") }
        guard (1...maxRequests).contains(requests.count) else {
            throw invalid("A group holds 1 to \(maxRequests) requests, not \(requests.count).")
        }
        var seen = Set<String>()
        return try requests.map { request in
            guard case .string(let id)? = request["id"], !id.isEmpty else { throw invalid("Every request needs a non-empty string id.") }
            guard seen.insert(id).inserted else { throw invalid("The id \"\(id)\" is used twice.") }
            var headers: [(String, String)] = []
            if case .object(let fields)? = request["headers"] {
                for field in fields { if case .string(let value) = field.value { headers.append((field.key, value)) } }
            }
            return SubRequest(
                id: id, method: request["method"]?.stringValue.map { HTTPRequest.Method(rawValue: $0.uppercased()) } ?? nil,
                url: request["url"]?.stringValue, body: request["body"], headers: headers)
        }
    }

    /// Runs one sub-request through the router and returns its `{"id", "status", "headers"?, "body"}` entry.
    func answer(_ sub: SubRequest, authorization: String?, context: AppRequestContext) async throws -> [UInt8] {
        var status = 400
        var etag: String?
        var body: [UInt8]
        do {
            let request = try Self.request(sub, authorization: authorization)
            guard let responder = responder.value.withLock({ $0 }) else { throw SyncError.unavailable }
            // The group's session, checked once (AuthMiddleware passes it on to every sub-request).
            var subContext = context
            subContext.isSubrequest = true
            // A route of its own: the group's endpoint path is a shared box, and it stays the group's (metrics).
            subContext.coreContext.endpointPath = EndpointPath()
            let response = try await responder.respond(to: request, context: subContext)
            status = response.status.code
            etag = response.headers[.eTag]
            let collector = BodyCollector()
            try await response.body.write(collector)
            body = collector.bytes.withLock { $0 }
        } catch let error as SyncError {
            status = error.status
            body = error.problemJSON
        }
        var writer = JSONWriter(capacity: body.count + 64)
        writer.raw("{\"id\":")
        writer.string(sub.id)
        writer.raw(",\"status\":\(status)")
        if let etag {
            writer.raw(",\"headers\":{\"ETag\":")
            writer.string(etag)
            writer.raw("}")
        }
        writer.raw(",\"body\":")
        if body.isEmpty { writer.raw("null") } else { writer.raw(bytes: body) }
        writer.raw("}")
        return writer.bytes
    }

    /// The HTTP request a sub-request stands for; 400 `invalid_subrequest` when it may not be run.
    static func request(_ sub: SubRequest, authorization: String?) throws -> Request {
        func invalid(_ detail: String) -> SyncError { SyncError(code: "invalid_subrequest", status: 400, detail: detail) }
        guard let method = sub.method, [.get, .put, .delete].contains(method) else {
            throw invalid("A sub-request's method is GET, PUT or DELETE.")
        }
        // Dot segments are resolved first (RFC 3986 §5.2.4), so `/api/v1/../health` is `/health`, outside the API,
        // and `/api/v1/./group` is the group route; what the path may reach is then decided by
        // `GroupReachMiddleware` on the route it resolves to, never on its spelling.
        guard let raw = sub.url, !raw.contains("#"), let url = Self.resolvingDotSegments(raw), url.hasPrefix("/api/v1/") else {
            throw invalid("A sub-request's url is a path under /api/v1/.")
        }
        var fields: HTTPFields = [:]
        if let authorization { fields[.authorization] = authorization }
        for (name, value) in sub.headers {
            switch name.lowercased() {
            case "if-match": fields[.ifMatch] = value
            case "if-none-match": fields[.ifNoneMatch] = value
            default: continue
            }
        }
        var buffer = ByteBuffer()
        if method == .put, let body = sub.body {
            fields[.contentType] = "application/json"
            buffer = ByteBuffer(bytes: JSONWriter.encode(body).utf8)
        }
        fields[.contentLength] = String(buffer.readableBytes)
        let head = HTTPRequest(method: method, scheme: nil, authority: nil, path: url, headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: buffer))
    }
}

extension GroupRoutes {
    /// `url` with `.` and `..` path segments resolved and empty ones dropped; nil when `..` climbs above the root.
    static func resolvingDotSegments(_ url: String) -> String? {
        let parts = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var segments: [Substring] = []
        for segment in parts[0].split(separator: "/") {
            switch segment {
            case ".": continue
            case "..": guard segments.popLast() != nil else { return nil }
            default: segments.append(segment)
            }
        }
        let path = "/" + segments.joined(separator: "/") + (parts[0].hasSuffix("/") && !segments.isEmpty ? "/" : "")
        return parts.count > 1 ? path + "?" + parts[1] : path
    }
}

/// Holds the router's responder, which exists only once every route (the group route included) is registered.
final class ResponderBox: Sendable {
    let value = Mutex<RouterResponder<AppRequestContext>?>(nil)
}

/// Collects a response body written by a route, to embed it in the group's answer.
final class BodyCollector: ResponseBodyWriter, Sendable {
    let bytes = Mutex<[UInt8]>([])

    func write(_ buffer: ByteBuffer) async throws {
        bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
