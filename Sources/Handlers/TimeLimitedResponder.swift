import Hummingbird
import Logging
import NIOCore
import SyncAPI
import Synchronization

/// Every request is answered within `limit` (protocol §8): past it, 503 `unavailable` with `Retry-After`, whatever
/// the database or a handler does. The handler is then cancelled unless it began a write, which runs on to its end
/// (a transaction always commits or rolls back) within a short grace (`Deadline`); a late answer is dropped.
///
/// It wraps the router's responder (not a middleware: the handler must be able to outlive the answer). The body is
/// read first, whole (at most `bodyMaxBytes`), so the handler never reads the connection after the answer has gone.
/// `GET /changes` and media uploads, prefixed by a space or not, are exempt (`RoutePolicies`): a live stream is meant to stay open and has caps of its own, and an
/// upload over a slow link may take long while it moves.
struct TimeLimitedResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == AppRequestContext {
    typealias Context = AppRequestContext
    let inner: Inner
    let limit: Duration
    /// What each route needs before it runs (streams, body limits), resolved from the request's path.
    let policies: RoutePolicies
    /// The memory of request bodies being read or held, across every request of the instance.
    let bodies: BodyBudget
    /// Whose share of `bodies` a request takes.
    let clientAddress: ClientAddressResolver
    /// The timers of the application's time limits.
    let timers: TimerWheel

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        // A method no route registers (QUERY, PROPFIND…) is answered like OPTIONS: 405 with `Allow` on a known
        // path (RFC 9110), 404 elsewhere — never a 404 for a path that exists.
        if !HTTPMethods.routed.contains(request.method) {
            var head = request.head
            head.method = .options
            request = Request(head: head, body: request.body)
        }
        let policy = policies.policy(method: request.method, path: request.uri.path)
        if policy.streams { return try await inner.respond(to: request, context: context) }
        var reserved = 0
        // Whose share a body takes: resolved only for a request that has one (reads, most requests, skip it).
        var address: String?
        defer { bodies.release(reserved, address: address) }
        if request.method == .put || request.method == .post || request.method == .patch {
            address = clientAddress.address(request, context)
            let limit = policy.bodyLimit ?? policies.itemLimit
            do {
                let declared = request.headers[.contentLength].flatMap(Int.init)
                if let declared, declared > limit, request.method != .patch { throw SyncError.payloadTooLarge(limit: limit) }
                // Its place in the instance's body memory before a byte is read: what it declares, else its limit.
                let wanted = min(max(0, declared ?? limit), limit)
                do throws(BodyBudget.Refusal) {
                    try bodies.reserve(wanted, address: address)
                    reserved = wanted
                } catch .instance {
                    throw SyncError(
                        .unavailable, detail: "This server is reading too many request bodies at once; retry shortly.",
                        retryAfter: 1)
                } catch .address {
                    throw SyncError.tooManyRequests(
                        retryAfter: 1, detail: "This address is sending too many request bodies at once; finish one before the next.")
                }
                // PATCH reads its body in its handler, once its content type is checked (415 before the body).
                if request.method != .patch { request.body = RequestBody(buffer: try await request.collectBody(upTo: limit)) }
            } catch {
                return ProblemMiddleware.problem(for: error, bodyMaxBytes: limit, logger: context.logger).response
            }
        }
        let ready = request
        let inner = self.inner
        let (work, grace) = RequestDeadline.split(limit)
        do {
            return try await Deadline.run(within: work, grace: grace, timers: timers) { budget in
                var context = context
                context.budget = budget
                return try await inner.respond(to: ready, context: context)
            }
        } catch let error as SyncError {
            context.logger.warning("request answered 503: it did not finish within \(limit)")
            return error.response
        }
    }
}

/// How a request's time limit is shared between its work and the wait for a write in progress.
enum RequestDeadline {
    /// The work's own limit and the grace a write that began is waited for past it (so that its answer says what it
    /// did), which together make the request's `limit`: were the work's limit the whole of it, a write in progress at
    /// its end would be answered past the limit. The grace is a fifth of the limit, at most a second.
    static func split(_ limit: Duration) -> (work: Duration, grace: Duration) {
        let grace = min(limit / 5, .seconds(1))
        return (limit - grace, grace)
    }
}

/// The bytes of request bodies an instance reads or holds at once, so that many connections trickling large bodies
/// cannot take the instance's memory. A body takes its place before its first byte is read, as much as it declares (its
/// limit when it declares nothing), and gives it back when its request is answered; past `limit`, 503 at once. Bodies
/// take their place before authentication, so one client address may hold at most `perAddress` of it (past it, 429):
/// one address with many connections cannot make every other client's writes wait.
public final class BodyBudget: Sendable {
    let limit: Int
    let perAddress: Int
    /// Addresses with no share of their own (the operator's proxies, when a request names no client behind them).
    let exempt: Set<String>
    private let state = Mutex(State())

    struct State {
        var used = 0
        var byAddress: [String: Int] = [:]
    }

    /// Why a body found no place.
    enum Refusal: Error {
        /// The instance's bodies are full.
        case instance
        /// The client address holds its share already.
        case address
    }

    init(limit: Int, perAddress: Int? = nil, exempt: Set<String> = []) {
        self.limit = limit
        self.perAddress = perAddress ?? limit
        self.exempt = Set(exempt.map { ClientAddress.key(ClientAddress.canonical($0)) })
    }

    /// Takes `bytes` for a body from `address` (nil: counted for the instance only); nothing is taken when it
    /// throws. A single body always fits an empty budget, and an address holding nothing.
    func reserve(_ bytes: Int, address: String? = nil) throws(Refusal) {
        // An empty body takes nothing, and leaves no entry behind for its address.
        guard bytes > 0 else { return }
        let key = address.map { ClientAddress.key(ClientAddress.canonical($0)) }.flatMap { exempt.contains($0) ? nil : $0 }
        try state.withLock { (state: inout State) throws(Refusal) in
            guard state.used == 0 || state.used + bytes <= limit else { throw .instance }
            if let key {
                let held = state.byAddress[key, default: 0]
                guard held == 0 || held + bytes <= perAddress else { throw .address }
                state.byAddress[key] = held + bytes
            }
            state.used += bytes
        }
    }

    /// Gives back what `reserve(_:address:)` took for the same address.
    func release(_ bytes: Int, address: String? = nil) {
        guard bytes > 0 else { return }
        let key = address.map { ClientAddress.key(ClientAddress.canonical($0)) }.flatMap { exempt.contains($0) ? nil : $0 }
        state.withLock { state in
            state.used -= bytes
            if let key {
                let left = state.byAddress[key, default: bytes] - bytes
                state.byAddress[key] = left > 0 ? left : nil
            }
        }
    }

    /// Bytes taken now (for tests and `/metrics`).
    var inUse: Int { state.withLock { $0.used } }

    /// Addresses holding a share now (tests).
    var addressesHolding: Int { state.withLock { $0.byAddress.count } }
}
