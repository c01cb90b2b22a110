import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// A TLS server channel whose handshake must complete within a limit, else the connection is closed: without it a
/// client that opens a connection and never finishes the handshake (or trickles it) holds a connection slot for good,
/// since the read and idle timeouts begin only once HTTP is negotiated.
struct HandshakeLimitedChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let limit: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right after the TLS handler, which tells the handlers after it when the handshake completed. The setup
            // runs before the channel reads anything, so no handshake can have completed yet.
            let operations = channel.pipeline.syncOperations
            let tls = try operations.handler(type: NIOSSLServerHandler.self)
            try operations.addHandler(TLSHandshakeTimeoutHandler(limit: limit), position: .after(tls))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Closes its connection when no `TLSUserEvent.handshakeCompleted` came within `limit`, then steps aside.
final class TLSHandshakeTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let limit: TimeAmount
    private var timer: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: limit) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            timer?.cancel()
            timer = nil
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
