import Hummingbird
import HummingbirdCore
import NIOCore
import SyncAPI
import Synchronization

/// `POST /group` (protocol §6): many calls in one round trip. This route parses the envelope and runs each
/// sub-request through the same router, middleware and engine as a direct call (`RoutedGroupWriter`); the engine's
/// `SyncEngine.group` decides the runs, their snapshots, their read-ahead and the group's time limit. What a
/// sub-request may reach is decided on its resolved route (`GroupReachMiddleware`).
struct GroupRoutes {
    let engine: SyncEngine
    let bodyMaxBytes: Int
    let maxRequests: Int
    /// How long the answer may wait for its first chunk, and then for each next one (the request time limit).
    let answerLimit: Duration
    /// The router's own responder, set once every route is registered.
    let responder: ResponderBox

    /// One sub-request as the client sent it.
    struct SubRequest: Sendable {
        let id: String
        let method: HTTPRequest.Method?
        /// Its URL with dot segments resolved (nil: none, a fragment, or `..` above the root), resolved once for the
        /// engine's read-ahead and the router.
        let url: String?
        let body: JSONValue?
        let headers: [(String, String)]

        /// What the engine needs of it: a read or a write, and for a read its path and `date`.
        var call: GroupCall {
            guard method == .get, let url else { return GroupCall(isRead: method == .get, path: nil, date: nil) }
            let uri = URI(url)
            return GroupCall(isRead: true, path: String(uri.path), date: uri.queryParameters["date"].map(String.init))
        }
    }

    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "group",
            [
                .post: { request, context in
                    let subRequests = try Self.parse(try await HTTPBodies.json(request, limit: bodyMaxBytes), maxRequests: maxRequests)
                    let authorization = request.headers[.authorization]
                    let stream = try await context.engine(engine).group(subRequests.map(\.call), try context.requireSession(), limit: answerLimit) {
                        stream in
                        RoutedGroupWriter(
                            routes: self, subRequests: subRequests, authorization: authorization, context: context, sink: GroupSink(stream: stream))
                    }
                    return HTTPBodies.response(json: stream)
                }
            ])
    }

    /// Checks the envelope: 400 `invalid_group` for the whole group when it is not a list of 1 to `maxRequests`
    /// objects with unique, non-empty string ids.
    static func parse(_ json: JSONValue, maxRequests: Int) throws -> [SubRequest] {
        func invalid(_ detail: String) -> SyncError { SyncError(.invalidGroup, detail: detail, field: "requests") }
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
                url: request["url"]?.stringValue.flatMap { $0.contains("#") ? nil : Self.resolvingDotSegments($0) }, body: request["body"],
                headers: headers)
        }
    }

    /// Runs one sub-request through the router and writes its `{"id", "status", "headers"?, "body"}` entry into
    /// the group's answer, its body as the route writes it.
    func answer(
        _ sub: SubRequest, authorization: String?, context: AppRequestContext, startBy: ContinuousClock.Instant, into sink: GroupSink
    ) async throws {
        var status = 400
        var etag: String?
        var response: Response?
        var problem: [UInt8] = []
        do {
            guard sub.method == .get || ContinuousClock.now < startBy else { throw SyncError.groupTimeLimit }
            let request = try Self.request(sub, authorization: authorization)
            guard let responder = responder.value.withLock({ $0 }) else { throw SyncError.unavailable }
            // The group's session, checked once (AuthMiddleware passes it on to every sub-request).
            var subContext = context
            subContext.isSubrequest = true
            // A route of its own: the group's endpoint path is a shared box, and it stays the group's (metrics).
            subContext.coreContext.endpointPath = EndpointPath()
            let answered = try await responder.respond(to: request, context: subContext)
            status = answered.status.code
            etag = answered.headers[.eTag]
            response = answered
        } catch let error as SyncError {
            let refusal = Problem(error)
            status = Int(refusal.status.code)
            problem = refusal.json
        }
        var writer = JSONWriter(capacity: 128)
        writer.raw(sink.entries == 0 ? "{\"id\":" : ",{\"id\":")
        writer.string(sub.id)
        writer.raw(",\"status\":\(status)")
        if let etag {
            writer.raw(",\"headers\":{\"ETag\":")
            writer.string(etag)
            writer.raw("}")
        }
        writer.raw(",\"body\":")
        try await sink.raw(bytes: writer.bytes)
        sink.startBody()
        if let response {
            try await response.body.write(sink)
        } else if !problem.isEmpty {
            try await sink.write(ByteBuffer(bytes: problem))
        }
        try await sink.raw(sink.bodyWritten ? "}" : "null}")
        sink.endEntry()
    }

    /// The HTTP request a sub-request stands for; 400 `invalid_subrequest` when it may not be run.
    static func request(_ sub: SubRequest, authorization: String?) throws -> Request {
        func invalid(_ detail: String) -> SyncError { SyncError(.invalidSubrequest, detail: detail) }
        guard let method = sub.method, [.get, .put, .patch, .delete].contains(method) else {
            throw invalid("A sub-request's method is GET, PUT, PATCH or DELETE.")
        }
        // Dot segments were resolved when the group was parsed (RFC 3986 §5.2.4), so `/api/v1/../health` is `/health`, outside the API,
        // and `/api/v1/./group` is the group route; what the path may reach is then decided by
        // `GroupReachMiddleware` on the route it resolves to, never on its spelling.
        guard let url = sub.url, url.hasPrefix("/api/v1/") else {
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
        if method == .put || method == .patch, let body = sub.body {
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
        // Most paths have nothing to resolve: one pass over the bytes instead of a split and a join.
        if Self.isResolved(url) { return url }
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

extension GroupRoutes {
    /// True when the path of `url` starts with `/` and has no empty, `.` or `..` segment.
    static func isResolved(_ url: String) -> Bool {
        var previous: UInt8 = 0
        var first = true
        for byte in url.utf8 {
            if byte == UInt8(ascii: "?") { break }
            if first {
                guard byte == UInt8(ascii: "/") else { return false }
                first = false
            } else if previous == UInt8(ascii: "/") && (byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".")) {
                return false
            }
            previous = byte
        }
        return !first
    }
}

/// Writes a group's answer as the engine runs its calls: `{"responses":[`, each sub-request's entry as the router
/// answers it (with the reads the engine chose for it), `]}`.
struct RoutedGroupWriter: GroupAnswerWriter {
    let routes: GroupRoutes
    let subRequests: [GroupRoutes.SubRequest]
    let authorization: String?
    let context: AppRequestContext
    let sink: GroupSink

    func begin() async throws { try await sink.raw("{\"responses\":[") }

    func answer(_ index: Int, reads: ReadSource?, startBy: ContinuousClock.Instant) async throws {
        var subContext = context
        if let reads { subContext.reads = reads }
        try await routes.answer(subRequests[index], authorization: authorization, context: subContext, startBy: startBy, into: sink)
    }

    func end() async throws {
        try await sink.raw("]}")
        try await sink.flush()
    }
}

/// Holds the router's responder, which exists only once every route (the group route included) is registered.
final class ResponderBox: Sendable {
    let value = Mutex<RouterResponder<AppRequestContext>?>(nil)
}

/// The group's answer on its way to the client: entries and sub-answer bodies gathered into chunks of about 32 KiB,
/// sent to the answer's stream (which waits while the client is a few chunks behind).
final class GroupSink: ResponseBodyWriter, Sendable {
    static let chunkBytes = 32 * 1024
    private struct State {
        var bytes: [UInt8] = []
        var bodyWritten = false
        var entries = 0
    }
    private let state = Mutex(State())
    let stream: AnswerStream

    init(stream: AnswerStream) {
        self.stream = stream
    }

    /// Entries written so far.
    var entries: Int { state.withLock { $0.entries } }
    /// Whether the current entry's body has any byte.
    var bodyWritten: Bool { state.withLock { $0.bodyWritten } }

    func startBody() { state.withLock { $0.bodyWritten = false } }
    func endEntry() { state.withLock { $0.entries += 1 } }

    func raw(_ text: String) async throws { try await raw(bytes: Array(text.utf8)) }

    func raw(bytes: [UInt8]) async throws {
        try await append { $0.bytes.append(contentsOf: bytes) }
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await append { state in
            guard buffer.readableBytes > 0 else { return }
            state.bodyWritten = true
            state.bytes.append(contentsOf: buffer.readableBytesView)
        }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}

    /// Sends what is gathered.
    func flush() async throws {
        let chunk = state.withLock { state -> [UInt8] in
            defer { state.bytes = [] }
            return state.bytes
        }
        if !chunk.isEmpty { try await stream.send(ByteBuffer(bytes: chunk)) }
    }

    private func append(_ change: (inout State) -> Void) async throws {
        let full = state.withLock { state -> [UInt8]? in
            change(&state)
            guard state.bytes.count >= Self.chunkBytes else { return nil }
            defer { state.bytes = [] }
            return state.bytes
        }
        if let full { try await stream.send(ByteBuffer(bytes: full)) }
    }
}
