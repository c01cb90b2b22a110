import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncAPI

/// The per-request context: Hummingbird's core storage, the TCP peer, and the authenticated session, once checked.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated account and its spaces; set by `AuthMiddleware` on every data route.
    public var principal: AccountSession?
    /// The caller in the space the request addresses (its home space, or the `/spaces/{spaceId}/` of the path); set by
    /// `AuthMiddleware` and `SpaceMiddleware`.
    public var session: Session?
    /// The TCP peer's IP address (nil in router-level tests, which have no socket).
    public let peerAddress: String?
    /// True for a sub-request of `POST /group`: `GroupReachMiddleware` then checks the route it resolved to.
    public var isSubrequest = false
    /// For the sub-requests of a group: where their reads go (the run's pinned snapshot, or the primary after a
    /// write of the group); nil for every other request. Passed as a value, so nothing else (a token lookup) reads
    /// through it.
    public var reads: ReadSource?
    /// The budget of the request's time limit (`TimeLimitedResponder`), which the services a handler calls are bound
    /// to (`bounded(by:)`): their writes begin only within it, and their store calls run under it. Nil for the routes
    /// without one (change streams, uploads): each store call then runs under a deadline of its own.
    public var budget: Deadline.Budget?
    /// The connection's event loop when the request came over a socket (nil in router-level tests). A long answer
    /// waits on it now and then, so that its writes never pile up faster than the event loop hands them to the socket.
    public let socketEventLoop: (any EventLoop)?
    /// Completes when the request's channel closes (the client went away); nil in router-level tests.
    public let closeFuture: EventLoopFuture<Void>?
    /// Closes the request's connection (a stream whose writes no longer move); nil in router-level tests.
    public let closeConnection: (@Sendable () -> Void)?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.principal = nil
        self.session = nil
        self.peerAddress = source.channel.remoteAddress?.ipAddress
        self.socketEventLoop = source.channel.remoteAddress == nil ? nil : source.channel.eventLoop
        self.closeFuture = source.channel.remoteAddress == nil ? nil : source.channel.closeFuture
        let channel = source.channel
        if channel.remoteAddress == nil {
            self.closeConnection = nil
        } else {
            self.closeConnection = { @Sendable in channel.close(promise: nil) }
        }
    }

    /// A path parameter, percent-decoded (`/contacts/a%3Ab` names the id `a:b`, as clients that encode `:` send it);
    /// nil when absent or not valid percent-encoding.
    func pathID(_ name: String) -> String? {
        parameters.get(name).flatMap { $0.removingPercentEncoding }
    }

    /// The caller in the addressed space; 404 `not_found` for an account that belongs to no space (its unprefixed
    /// paths address nothing).
    func requireSession() throws -> Session {
        guard let session else {
            guard principal != nil else { throw SyncError.unauthorized }
            throw SyncError.notFound("This account belongs to no space.")
        }
        return session
    }

    /// The engine as this request uses it: bound to its time limit, reading where its group reads.
    func engine(_ engine: SyncEngine) -> SyncEngine {
        engine.bounded(by: budget).reading(reads)
    }

    /// The authenticated account; routes behind `AuthMiddleware` always have one.
    func requirePrincipal() throws -> AccountSession {
        guard let principal else { throw SyncError.unauthorized }
        return principal
    }
}

/// Which address a request comes from (protocol §1): the TCP peer, or, when the peer is a proxy the operator named
/// with `--trusted-proxy`, the first untrusted hop of `X-Forwarded-For` read from the right.
public struct ClientAddressResolver: Sendable {
    public let trustedProxies: Set<String>

    /// Addresses are compared canonically: a dual-stack listener sees `::ffff:127.0.0.1` for `127.0.0.1`, and IPv6 may
    /// be written several ways.
    public init(trustedProxies: Set<String> = []) { self.trustedProxies = Set(trustedProxies.map(ClientAddress.canonical)) }

    func address(_ request: Request, _ context: AppRequestContext) -> String {
        let peer = ClientAddress.canonical(context.peerAddress ?? "local")
        guard trustedProxies.contains(peer) else { return peer }
        let hops = request.headers[values: .xForwardedFor].flatMap { $0.split(separator: ",") }
            .map { ClientAddress.canonical(String($0.trimmingCharacters(in: .whitespaces).prefix(64))) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trustedProxies.contains(hop) { return hop }
        return hops.first ?? peer
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
