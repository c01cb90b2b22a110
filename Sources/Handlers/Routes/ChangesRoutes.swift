import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import SyncAPI

/// `GET /changes` (protocol §9) and `GET /changes?spaces=all` (§15): parses the request and writes the server-sent
/// events that the engine's `ChangeFeed` computes, with the socket's limits (a body that must start within 5 s, a
/// write bounded at 10 s, a client gone ends the stream at once).
///
/// It follows the SSE conventions so standard EventSource clients resume by themselves: every `change` carries
/// `id: <date>`, `Last-Event-ID` stands for a missing `date`, the stream opens with a `retry:` hint, and proxies are
/// told not to buffer it.
struct ChangesRoutes {
    let feed: ChangeFeed
    /// The timers of the application's time limits.
    let timers: TimerWheel

    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "changes", headFromGet: false,
            [
                .get: { request, context in
                    guard let token = AuthMiddleware.bearerToken(request) else { throw SyncError.unauthorized }
                    if request.uri.queryParameters["spaces"] != nil {
                        // Only the unprefixed path follows every space (protocol §15).
                        guard context.parameters.get("spaceId") == nil else {
                            throw SyncError.invalidParameter("spaces", "spaces=all is a parameter of /api/v1/changes only.")
                        }
                        let principal = try context.requirePrincipal()
                        let query = try SyncQuery(request, allowed: ["spaces"])
                        guard query.values["spaces"] == "all" else {
                            throw SyncError.invalidParameter("spaces", "spaces takes the value all.")
                        }
                        return eventStream(context, try await feed.openAllSpaces(principal, token: token))
                    }
                    let session = try context.requireSession()
                    let query = try SyncQuery(request, allowed: ["date"])
                    let date = query.values["date"] ?? request.headers[.lastEventID]
                    return eventStream(context, try await feed.openSpace(session, token: token, date: date))
                }
            ])
    }

    /// The `200 text/event-stream` answer of a stream whose slot is reserved and whose start is read: its events are
    /// written after the `retry:` hint, with `watch` around each write and `stop` stopped when the server begins a graceful
    /// shutdown or when its client goes away (its waits on the hub then end at once).
    func eventStream(_ context: AppRequestContext, _ opened: ChangeFeed.Opened) -> Response {
        let slot = opened.slot
        // The body's 5 s to start count from here, once the start is read (counted from before the start's reads, a
        // start slower than that would leave a 200 whose body sends nothing).
        if context.socketEventLoop != nil { slot.armStartLimit(.seconds(5), timers: timers) }
        // A client that goes away gives its slot back at once, and its stream (only its stream: waking the family's
        // would make each of its other streams read its position) wakes to end.
        let stop = WaitStop()
        context.closeFuture?.whenComplete { _ in
            slot.release()
            stop.stop()
        }
        // A write that does not complete within 10 s (a peer that vanished while the connection looks open, so the
        // write waits for room that never comes) gives the slot back and closes the connection.
        // On the application's wheel: cancelling an event-loop timer searches the loop's whole timer heap, and every
        // write of every stream cancels one.
        let closeConnection = context.closeConnection
        let timers = self.timers
        let live = context.socketEventLoop != nil
        let watch: @Sendable () -> @Sendable () -> Void = {
            guard live else { return {} }
            let timer = timers.schedule(in: .seconds(10)) {
                slot.release()
                closeConnection?()
            }
            return { timers.cancel(timer) }
        }
        let body = ResponseBody { writer in
            defer { slot.release() }
            // Too late: the slot was given back already (the stream would be uncounted).
            guard slot.start() else { return }
            let written = watch()
            try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
            written()
            // One graceful-shutdown handler for the stream's whole life, not one per wait.
            try await withGracefulShutdownHandler {
                try await opened.run(write: { try await writer.write(ByteBuffer(string: $0)) }, watch: watch, stop: stop)
            } onGracefulShutdown: {
                stop.stop()
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache", .xAccelBuffering: "no"],
            body: body)
    }
}

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
