import HTTPTypes
import NIOCore
import NIOHTTPTypes
import SyncAPI
import Synchronization

/// Closes a connection whose first request head does not arrive within `headTimeout`, whose request body stalls for
/// `bodyTimeout` between two pieces, or whose whole body takes longer than `bodyBase` plus its length at
/// `minimumBytesPerSecond` (protocol §8: a body trickled a byte at a time would re-arm the stall timer forever). A
/// large upload over a slow but live link goes on; a trickle does not.
/// Between requests of a keep-alive connection the server's idle timeout applies.
///
/// A request answered before its body was read (401, 413, 415) is a lingering close, bounded: the rest of the body is
/// read and dropped for at most `unreadBodyTime` and `unreadBodyBytes`, so that the client reads its answer rather than
/// a reset; past either the connection is closed.
final class RequestReadTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long, and how many bytes of, a body is still read after its request was answered.
    static let unreadBodyTime = TimeAmount.seconds(2)
    static let unreadBodyBytes = 256 * 1024

    let headTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    /// The whole body's time: `bodyBase` plus its length (`Content-Length`, else `maxBodyBytes`) at this rate.
    let bodyBase: TimeAmount
    let minimumBytesPerSecond: Int64
    let maxBodyBytes: Int64
    private var timer: Scheduled<Void>?
    private var wholeBody: Scheduled<Void>?
    /// A request head came and its end has not.
    private var requestOpen = false
    /// Bytes of body read since the request was answered; nil while it is not.
    private var unreadBytes: Int?
    /// The timers an open request needs, set once the read that brought its head or body piece is complete: a request
    /// whose end came in the same read (nearly every GET) never schedules nor cancels a timer (rather than two timers
    /// set and cancelled on the event loop per request).
    private var stallDue = false
    private var wholeBodyLimit: TimeAmount?

    init(
        headTimeout: TimeAmount, bodyTimeout: TimeAmount, bodyBase: TimeAmount = .seconds(10), minimumBytesPerSecond: Int64 = 8192,
        maxBodyBytes: Int64
    ) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyBase = bodyBase
        self.minimumBytesPerSecond = max(1, minimumBytesPerSecond)
        self.maxBodyBytes = maxBodyBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(headTimeout, context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if timer == nil { arm(headTimeout, context: context) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestOpen = true
            unreadBytes = nil
            stallDue = true
            let declared = head.headerFields[.contentLength].flatMap(Int64.init).map { min($0, maxBodyBytes) } ?? maxBodyBytes
            wholeBodyLimit = bodyBase + .seconds(declared / minimumBytesPerSecond)
            wholeBody?.cancel()
            wholeBody = nil
        case .body(let bytes):
            if let unread = unreadBytes {
                unreadBytes = unread + bytes.readableBytes
                if unread + bytes.readableBytes > Self.unreadBodyBytes {
                    context.close(promise: nil)
                    return
                }
            } else {
                stallDue = true
            }
        case .end:
            requestOpen = false
            unreadBytes = nil
            disarm()
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if requestOpen, unreadBytes == nil {
            if stallDue { arm(bodyTimeout, context: context) }
            if let limit = wholeBodyLimit {
                let channel = context.channel
                wholeBody = context.eventLoop.scheduleTask(in: limit) { channel.close(promise: nil) }
            }
        }
        stallDue = false
        wholeBodyLimit = nil
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), requestOpen, unreadBytes == nil {
            // Answered before the body ended: what is left is read for a short while only.
            unreadBytes = 0
            timer?.cancel()
            wholeBody?.cancel()
            wholeBody = nil
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: Self.unreadBodyTime) { channel.close(promise: nil) }
        }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    /// (Re)arms the stall timer; the whole-body timer runs on.
    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
        wholeBody?.cancel()
        wholeBody = nil
        stallDue = false
        wholeBodyLimit = nil
    }
}

/// Caps the open connections (HTTP/2: streams) of one client address, IPv6 by /64: past the cap a new one is closed at
/// once, so one address cannot take every connection slot of the instance. Peers named by
/// `--trusted-proxy` are exempt (every client comes through them).
final class AddressConnectionLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let counts: AddressConnectionCounts
    private var key: String?

    init(counts: AddressConnectionCounts) { self.counts = counts }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if key == nil { admit(context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    private func admit(_ context: ChannelHandlerContext) {
        guard key == nil, let address = context.channel.remoteAddress?.ipAddress else { return }
        let key = ClientAddress.key(ClientAddress.canonical(address))
        guard counts.open(key) else {
            context.close(promise: nil)
            return
        }
        self.key = key
    }

    private func release() {
        if let key { counts.close(key) }
        key = nil
    }
}

/// Open connections per address key, shared by every connection of the server.
final class AddressConnectionCounts: Sendable {
    let limit: Int
    let exempt: Set<String>
    private let open = Mutex<[String: Int]>([:])

    init(limit: Int, exempt: Set<String>) {
        self.limit = limit
        self.exempt = Set(exempt.map { ClientAddress.key(ClientAddress.canonical($0)) })
    }

    /// Counts a new connection of `key`; false past the limit (not counted).
    func open(_ key: String) -> Bool {
        if exempt.contains(key) { return true }
        return open.withLock { open in
            guard open[key, default: 0] < limit else { return false }
            open[key, default: 0] += 1
            return true
        }
    }

    func close(_ key: String) {
        if exempt.contains(key) { return }
        open.withLock { open in
            let left = open[key, default: 1] - 1
            open[key] = left > 0 ? left : nil
        }
    }

    /// Open connections of `key` (for tests).
    func count(_ key: String) -> Int { open.withLock { $0[key, default: 0] } }
}
