import Hummingbird
import NIOCore
import Synchronization

/// An identity provider's key set served over loopback HTTP by the test, as a provider's `jwks_uri` serves it: the
/// set can be replaced (a rotation) and the server stopped (the provider unreachable) while the app under test runs.
final class KeySetServer: Sendable {
    private let body: Mutex<String>
    private let requests = Atomic<Int>(0)

    init(jwks: String) { body = Mutex(jwks) }

    /// Publishes another set (the provider rotated its keys).
    func publish(_ jwks: String) { body.withLock { $0 = jwks } }

    /// How many times the set was fetched.
    var fetches: Int { requests.load(ordering: .relaxed) }

    /// Serves the set at `http://127.0.0.1:PORT/jwks` (fresh for an hour, `Cache-Control: max-age=3600`) while `body`
    /// runs with the URL; `body` gets a `stop` that shuts the server down and returns once its port is closed.
    func serving<T: Sendable>(_ body: @Sendable (_ url: String, _ stop: @escaping @Sendable () async -> Void) async throws -> T) async throws -> T {
        let router = Router()
        router.get("jwks") { _, _ in
            self.requests.add(1, ordering: .relaxed)
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=3600"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: self.body.withLock { $0 })))
        }
        return try await LoopbackServer.serving(router) { port, stop in try await body("http://127.0.0.1:\(port)/jwks", stop) }
    }
}

/// A router served on a free loopback port while `body` runs with the port; `stop` shuts the server down and returns
/// once its port is closed (it is stopped at the end anyway).
enum LoopbackServer {
    static func serving<T: Sendable>(
        _ router: Router<BasicRequestContext>, _ body: @Sendable (_ port: Int, _ stop: @escaping @Sendable () async -> Void) async throws -> T
    ) async throws -> T {
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                port.yield(channel.localAddress?.port ?? 0)
                port.finish()
            })
        let server = Task { try await app.runService() }
        defer { server.cancel() }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else { throw TestFailure("the loopback server did not start") }
        return try await body(bound) {
            server.cancel()
            _ = await server.result
        }
    }
}
