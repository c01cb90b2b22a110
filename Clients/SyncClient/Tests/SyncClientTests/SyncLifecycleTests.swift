import Foundation
import Logging
import SyncClient
import SyncClientTesting
import Testing

/// `SyncLifecycle`: live mode while active and reachable, a bounded push on entering the background, live again at
/// once when the network comes back.
@Suite("App lifecycle", .timeLimit(.minutes(2)))
struct SyncLifecycleTests {
    /// The fake, with every `POST /group` stalled (until its caller is cancelled) while `stalled`.
    final class StallingTransport: HTTPTransport {
        let server: FakeSyncServer
        let stalled = Locked(false)

        init(_ server: FakeSyncServer) { self.server = server }

        func send(_ call: HTTPCall) async throws -> HTTPAnswer {
            if call.url.path.hasSuffix("/group"), stalled.withLock({ $0 }) {
                // Never answered: a stream that yields nothing ends only when the waiting task is cancelled.
                let (never, continuation) = AsyncStream.makeStream(of: Void.self)
                for await _ in never {}
                continuation.finish()
                throw CancellationError()
            }
            return try await server.send(call)
        }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await server.stream(call)
        }
    }

    /// A signed-in, synced client whose live mode, once its stream failed, waits 10 minutes (past the tests' limit)
    /// before it connects again.
    static func signedIn(
        _ server: FakeSyncServer, transport: (any HTTPTransport)? = nil, logs: AsyncStream<String>.Continuation? = nil
    ) async throws -> SyncClient {
        let client = try TestKitTests.client(server, transport: transport) {
            $0.liveMaximumBackoff = .seconds(600)
            $0.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .seconds(600), maximumDelay: .seconds(600), sleep: { _ in })
            if let logs { $0.makeLogger = { label in Logger(label: label) { _ in LoggingTests.Capture(label: label) { logs.yield($0.message) } } } }
        }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.sync()
        return client
    }

    @Test("active: live mode; background: it stops and the unsent write leaves; active again: live again")
    func phases() async throws {
        let server = FakeSyncServer()
        let client = try await Self.signedIn(server)
        // The push's end is the event this test waits for, not the default 4 s limit: on a loaded machine a push to
        // the fake took longer (CI, one core busy; the limit itself is the stalled-push test's below).
        let lifecycle = SyncLifecycle(client: client, flushLimit: .seconds(90))
        #expect(await lifecycle.phase == .background && !client.status.live)
        await lifecycle.set(phase: .active)
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        await lifecycle.set(phase: .inactive)
        #expect(client.status.live, "a brief inactive phase changes nothing")
        try await client.save(Contact(id: "c1", firstName: "Ann"))
        await lifecycle.set(phase: .background)
        #expect(!client.status.live && client.status.pendingWrites == 0)
        #expect(server.items(.contacts)["c1"] != nil)
        await lifecycle.set(phase: .active)
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        await client.stopLive()
    }

    @Test("the network gone: live stops; back: live starts at once and sends what waited")
    func reachability() async throws {
        let server = FakeSyncServer()
        let client = try await Self.signedIn(server)
        let lifecycle = SyncLifecycle(client: client)
        await lifecycle.set(phase: .active)
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        server.isOffline = true
        await lifecycle.set(reachable: false)
        #expect(!client.status.live)
        try await client.save(Contact(id: "c2", firstName: "Bob"))
        server.isOffline = false
        await lifecycle.set(reachable: true)
        await AutoPushStatusTests.until(client) { $0.liveConnected && $0.pendingWrites == 0 }
        #expect(server.items(.contacts)["c2"] != nil)
        await client.stopLive()
    }

    @Test("a new path while live mode waits out its backoff (the server was away): it connects now, not in 10 minutes")
    func newPathCutsBackoff() async throws {
        let server = FakeSyncServer()
        let (logs, tap) = AsyncStream.makeStream(of: String.self)
        let client = try await Self.signedIn(server, logs: tap)
        let lifecycle = SyncLifecycle(client: client)
        await lifecycle.set(phase: .active)
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        // The stream drops: live mode waits 10 minutes before it connects again.
        server.isOffline = true
        for await line in logs where line == "stream dropped" { break }
        #expect(!client.status.liveConnected)
        server.isOffline = false
        // The path monitor reports a satisfied path (a new network): connected within the test's limit.
        await lifecycle.set(reachable: true)
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        await client.stopLive()
    }

    @Test("a push that cannot finish stops at the flush limit on entering the background; the write stays queued")
    func boundedFlush() async throws {
        let server = FakeSyncServer()
        let transport = StallingTransport(server)
        let client = try await Self.signedIn(server, transport: transport)
        let lifecycle = SyncLifecycle(client: client, flushLimit: .milliseconds(100))
        try await client.save(Contact(id: "c3", firstName: "Cid"))
        transport.stalled.withLock { $0 = true }
        await lifecycle.set(phase: .active)
        await lifecycle.set(phase: .background)
        #expect(client.status.pendingWrites == 1 && !client.status.live)
        transport.stalled.withLock { $0 = false }
        try await client.push()
        #expect(server.items(.contacts)["c3"] != nil)
    }
}
