import NIOCore
import NIOHTTPTypes

/// Closes a connection whose first request head does not arrive within `headTimeout`, or whose request body stalls
/// for `bodyTimeout` between two pieces (protocol §8), so slow senders cannot hold connections forever while a large
/// upload over a slow but live link goes on.
/// Between requests of a keep-alive connection the server's idle timeout applies.
final class RequestReadTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let headTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(headTimeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
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
        case .head, .body: arm(bodyTimeout, context: context)
        case .end: disarm()
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        disarm()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
