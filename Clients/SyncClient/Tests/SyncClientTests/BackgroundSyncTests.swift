import Foundation
import SyncClient
import SyncClientTesting
import Testing

/// `backgroundSync(within:)` against a server whose sync answer never ends: iOS kills an app that overruns its
/// background window, so the sync must stop at the limit, its download cancelled, nothing applied.
@Suite("Background sync stops at its limit")
struct BackgroundSyncTests {
    /// The fake server, except that while `stuck` a group's answer sends its status and a first byte, then nothing
    /// until the client lets go of it; each such answer is reported on `started` and, once let go of, on `abandoned`.
    final class StuckGroupTransport: HTTPTransport {
        let fake: FakeSyncServer
        let stuck = Locked(false)
        let started: AsyncStream<Void>
        private let start: AsyncStream<Void>.Continuation
        let abandoned: AsyncStream<Void>
        private let report: AsyncStream<Void>.Continuation

        init(_ fake: FakeSyncServer) {
            self.fake = fake
            (started, start) = AsyncStream.makeStream(of: Void.self)
            (abandoned, report) = AsyncStream.makeStream(of: Void.self)
        }

        func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await fake.send(call) }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await fake.stream(call)
        }

        func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
            guard stuck.withLock({ $0 }), call.url.path.hasSuffix("/group") else { return HTTPStreamedAnswer(try await fake.send(call)) }
            let report = self.report
            start.yield()
            return HTTPStreamedAnswer(
                status: 200, headers: ["Content-Type": "application/json"],
                body: AsyncThrowingStream { continuation in
                    continuation.yield(Data(#"{"responses":["#.utf8))
                    continuation.onTermination = { _ in report.yield() }
                })
        }
    }

    static func client(_ transport: StuckGroupTransport) throws -> SyncClient {
        try TestKitTests.client(transport.fake, transport: transport)
    }

    @Test(
        "the system ends the background task while the sync downloads: the download is cancelled, nothing applied, the next sync runs",
        .timeLimit(.minutes(10)))
    func expiration() async throws {
        let fake = FakeSyncServer()
        let transport = StuckGroupTransport(fake)
        let client = try Self.client(transport)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.sync()
        let date = client.dateOfSync
        fake.edit(.contacts, id: "c1", json: ["firstName": "Bob"])
        transport.stuck.withLock { $0 = true }
        // What a BGAppRefreshTask's expiration handler does: cancel the task running the sync, once it downloads.
        let work = Task { await client.backgroundSync(within: .seconds(3600)) }
        var started = transport.started.makeAsyncIterator()
        _ = await started.next()
        work.cancel()
        // The stuck answer is let go of (its download cancelled), and nothing of it lands.
        var abandoned = transport.abandoned.makeAsyncIterator()
        _ = await abandoned.next()
        #expect(try client.dateOfSync == date && client.items(.contacts).isEmpty)
        // The app comes to the foreground at once: its sync does not join the dying one, it runs its own.
        transport.stuck.withLock { $0 = false }
        try await client.sync()
        #expect(try client.items(.contacts).map { $0["id"] } == ["c1"])
        #expect(await work.value == .failed)
    }

    @Test("a sync that cannot finish within the limit returns .failed at the limit; the next sync runs", .timeLimit(.minutes(10)))
    func limit() async throws {
        let fake = FakeSyncServer()
        let transport = StuckGroupTransport(fake)
        let client = try Self.client(transport)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        fake.edit(.contacts, id: "c1", json: ["firstName": "Bob"])
        transport.stuck.withLock { $0 = true }
        // However far the sync got when the limit came (on a loaded machine, maybe not to its download), it stops.
        #expect(await client.backgroundSync(within: .milliseconds(50)) == .failed)
        #expect(try client.items(.contacts).isEmpty)
        transport.stuck.withLock { $0 = false }
        try await client.sync()
        #expect(try client.items(.contacts).map { $0["id"] } == ["c1"])
    }
}

/// The status after writes that left by themselves once the server came back.
@Suite("Status after an automatic push")
struct AutoPushStatusTests {
    /// Returns once the client's status satisfies `condition` (checked now, then on each status change).
    static func until(_ client: SyncClient, _ condition: (SyncStatus) -> Bool) async {
        let updates = client.statusUpdates
        if condition(client.status) { return }
        for await status in updates where condition(status) { return }
    }

    @Test("offline while a write waits, then back: the write leaves by itself and the state is idle again, no error left", .timeLimit(.minutes(10)))
    func recovers() async throws {
        let server = FakeSyncServer()
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("autopush-"))
        configuration.transport = server
        configuration.pushDelay = .milliseconds(1)
        configuration.liveMaximumBackoff = .milliseconds(20)
        configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(1))
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.isOffline = true
        try await client.save(Contact(id: "c1", firstName: "Ann"))
        await Self.until(client) { $0.state == .offline }
        server.isOffline = false
        await Self.until(client) { $0.pendingWrites == 0 && $0.state == .idle }
        #expect(client.status.lastError == nil)
        #expect(server.items(.contacts)["c1"]?["firstName"] == "Ann")
    }
}
