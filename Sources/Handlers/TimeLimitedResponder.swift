import Hummingbird
import Logging
import NIOCore
import SyncAPI

/// Every request is answered within `limit` (protocol §8): past it, 503 `unavailable` with `Retry-After`, whatever
/// the database or a handler does. The handler is not cancelled: it runs on to its own end (a transaction always
/// commits or rolls back) and its late answer is dropped.
///
/// It wraps the router's responder (not a middleware: the handler must be able to outlive the answer). The body is
/// read first, whole (at most `bodyMaxBytes`), so the handler never reads the connection after the answer has gone.
/// `GET /changes` and media uploads are exempt: a live stream is meant to stay open and has caps of its own, and an
/// upload over a slow link may take long while it moves.
struct TimeLimitedResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == AppRequestContext {
    typealias Context = AppRequestContext
    let inner: Inner
    let limit: Duration
    let bodyMaxBytes: Int

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        // A method no route registers (QUERY, PROPFIND…) is answered like OPTIONS: 405 with `Allow` on a known
        // path (RFC 9110), 404 elsewhere — never a 404 for a path that exists.
        if !HTTPMethods.routed.contains(request.method) {
            var head = request.head
            head.method = .options
            request = Request(head: head, body: request.body)
        }
        if Self.isStreaming(request) { return try await inner.respond(to: request, context: context) }
        if request.method == .put || request.method == .post {
            let limit = AccountRoutes.bodyLimit(request.uri.path, itemLimit: bodyMaxBytes)
            do {
                if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
                    throw SyncError.payloadTooLarge(limit: limit)
                }
                request.body = RequestBody(buffer: try await request.collectBody(upTo: limit))
            } catch {
                return ProblemMiddleware.problem(for: error, bodyMaxBytes: limit, logger: context.logger).response
            }
        }
        let ready = request
        let inner = self.inner
        let (work, grace) = RequestDeadline.split(limit)
        do {
            return try await Deadline.run(within: work, grace: grace) { try await inner.respond(to: ready, context: context) }
        } catch let error as SyncError {
            context.logger.warning("request answered 503: it did not finish within \(limit)")
            return error.response
        }
    }

    /// `GET /api/v1/changes` and `POST /api/v1/media` (an upload streams to storage as it arrives, bounded by the
    /// body read timeout and the media size limit), however many slashes separate their segments.
    static func isStreaming(_ request: Request) -> Bool {
        // Most requests end in another word: they are told apart without splitting the path (issue 19 profile).
        let path = request.uri.path
        let end = path.utf8.lastIndex { $0 != UInt8(ascii: "/") }
        guard let end, path.utf8[end] == UInt8(ascii: "s") || path.utf8[end] == UInt8(ascii: "a") else { return false }
        let segments = path.split(separator: "/")
        return (request.method == .get && segments.elementsEqual(["api", "v1", "changes"]))
            || (request.method == .post && segments.elementsEqual(["api", "v1", "media"]))
    }
}

/// How a request's time limit is shared between its work and the wait for a write in progress.
enum RequestDeadline {
    /// The work's own limit and the grace a write that began is waited for past it (so that its answer says what it
    /// did), which together make the request's `limit`: the work's limit was the whole of it, and a write in progress
    /// at 15 s answered at 16 s (measured during a PostgreSQL outage, security audit 651e0ee). The grace is a fifth of
    /// the limit, at most a second.
    static func split(_ limit: Duration) -> (work: Duration, grace: Duration) {
        let grace = min(limit / 5, .seconds(1))
        return (limit - grace, grace)
    }
}
