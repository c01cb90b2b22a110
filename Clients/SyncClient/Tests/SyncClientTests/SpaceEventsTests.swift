import Foundation
import SyncClient
import SyncClientTesting
import Synchronization
import Testing

/// One stream for all spaces (protocol §15, issue 38): `spaceEvents()` reads `GET /changes?spaces=all`, and a
/// `SpaceSet` syncs each space whose date moved and erases the replica of a space the account lost. Every wait is for
/// an event; a run that hangs fails at the time limit.
@Suite("SpaceEvents: one stream for all spaces", .timeLimit(.minutes(10)))
struct SpaceEventsTests {
    /// A signed-up client of the fake server's home space; reconnections and retries at once.
    static func signedUp(_ server: FakeSyncServer) async throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("allspaces-"))
        configuration.transport = server
        configuration.pushDelay = nil
        configuration.liveMaximumBackoff = .milliseconds(10)
        configuration.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .milliseconds(1), sleep: { _ in })
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        return client
    }

    /// A set of the account's spaces, each replica a fresh file.
    static func spaceSet(_ home: SyncClient, holding: [String] = []) throws -> SpaceSet {
        let prefix = Scratch.path("allspaces-set-", suffix: "-")
        return try SpaceSet(account: home, holding: holding) { prefix + $0 + ".sqlite" }
    }

    /// Reads a stream until an element matches `stop`: all it read, the matching one last.
    static func read<T>(_ iterator: inout AsyncThrowingStream<T, any Error>.Iterator, until stop: (T) -> Bool) async throws -> [T] {
        var read: [T] = []
        while let next = try await iterator.next() {
            read.append(next)
            if stop(next) { return read }
        }
        Issue.record("the stream ended before the awaited element: \(read)")
        return read
    }

    /// How many times a space's contacts were synced (its `ctcsync` sub-requests).
    static func syncs(_ server: FakeSyncServer, _ space: String?) -> Int {
        let prefix = "GET " + (space.map { "/spaces/\($0)" } ?? "") + "/ctcsync"
        return server.calls.filter { $0 == prefix || $0.hasPrefix(prefix + "?") }.count
    }

    @Test("the stream lists the spaces, then each space's date; then what moves, unprefixed from any client")
    func wire() async throws {
        let server = FakeSyncServer()
        server.join(space: "s1")
        let home = try await Self.signedUp(server)
        let club = try home.client(forSpace: "s1", replicaPath: Scratch.path("allspaces-club-"))
        var events = club.spaceEvents().makeAsyncIterator()
        let opening = try await Self.read(&events) { $0 == .changed(space: "s1", date: "fake.1") }
        #expect(
            opening == [
                .spaces([SpaceRoleInfo(id: "fake-family", role: "owner"), SpaceRoleInfo(id: "s1", role: "member")]),
                .changed(space: "fake-family", date: "fake.1"), .changed(space: "s1", date: "fake.1"),
            ])
        server.join(space: "s1", role: "reader")
        #expect(try await events.next() == .spaces([SpaceRoleInfo(id: "fake-family", role: "owner"), SpaceRoleInfo(id: "s1", role: "reader")]))
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"], space: "s1")
        #expect(try await events.next() == .changed(space: "s1", date: "fake.2"))
        #expect(server.calls.contains("GET /changes?spaces=all") && !server.calls.contains { $0.hasPrefix("GET /spaces/s1/changes") })
    }

    @Test("a 503 is retried; a refusal (400) ends the stream with its error")
    func failures() async throws {
        let server = FakeSyncServer()
        let home = try await Self.signedUp(server)
        server.failNext(1, status: 503)
        var events = home.spaceEvents().makeAsyncIterator()
        #expect(try await events.next() == .spaces([SpaceRoleInfo(id: "fake-family", role: "owner")]))
        #expect(server.calls.filter { $0 == "GET /changes?spaces=all" }.count == 2)
        server.failNext(1, status: 400)
        let refused = home.spaceEvents()
        await #expect(throws: SyncClientError.server(status: 400, code: ServerErrorCode(rawValue: "scripted"), detail: "scripted")) {
            for try await _ in refused {}
        }
    }

    @Test("as the stream opens, only the spaces whose replica is at another date sync; a change syncs its space")
    func initialDates() async throws {
        let server = FakeSyncServer()
        server.join(space: "s1")
        server.join(space: "s2")
        let home = try await Self.signedUp(server)
        for space in ["s1", "s2"] { server.edit(.contacts, id: "c-\(space)", json: ["firstName": .string(space)], space: space) }
        let spaces = try Self.spaceSet(home)
        try await home.sync()
        try await spaces.client(forSpace: "s1").sync()
        #expect(Self.syncs(server, nil) == 1 && Self.syncs(server, "s1") == 1)

        var updates = spaces.follow().makeAsyncIterator()
        let opening = try await Self.read(&updates) { if case .synced("s2", _) = $0 { true } else { false } }
        guard case .spaces(let listing) = opening.first else { return #expect(Bool(false), "\(opening)") }
        #expect(listing.map(\.id) == ["fake-family", "s1", "s2"])
        #expect(try spaces.client(forSpace: "s2").all(Contact.self).map(\.id) == ["c-s2"])

        // Each space's dates are handled in order: had the opening date synced s1 or home, that sync would come first.
        server.edit(.contacts, id: "c2", json: ["firstName": "Bob"], space: "s1")
        let s1 = try await Self.read(&updates) { if case .synced("s1", _) = $0 { true } else { false } }
        guard case .synced(_, let report) = s1.last else { return }
        #expect(report.date == "fake.3")
        #expect(try spaces.client(forSpace: "s1").all(Contact.self).map(\.id) == ["c-s1", "c2"])
        server.edit(.contacts, id: "c3", json: ["firstName": "Cy"])
        _ = try await Self.read(&updates) { if case .synced("fake-family", _) = $0 { true } else { false } }
        #expect(try home.all(Contact.self).map(\.id) == ["c3"])
        #expect(Self.syncs(server, nil) == 2 && Self.syncs(server, "s1") == 2 && Self.syncs(server, "s2") == 1)
        #expect(spaces.heldSpaces == ["s1", "s2"], "the home space is the account client's")
    }

    @Test("a space joined later is opened and synced")
    func joined() async throws {
        let server = FakeSyncServer()
        let home = try await Self.signedUp(server)
        let spaces = try Self.spaceSet(home)
        var updates = spaces.follow().makeAsyncIterator()
        _ = try await Self.read(&updates) { if case .synced("fake-family", _) = $0 { true } else { false } }
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"], space: "s3")
        server.join(space: "s3", role: "reader")
        let joined = try await Self.read(&updates) { if case .synced("s3", _) = $0 { true } else { false } }
        #expect(joined.contains { if case .spaces(let listing) = $0 { listing.last == SpaceRoleInfo(id: "s3", role: "reader") } else { false } })
        #expect(spaces.heldSpaces == ["s3"])
        #expect(try spaces.client(forSpace: "s3").all(Contact.self).map(\.id) == ["c1"])
    }

    @Test("a space no longer listed has its replica erased and is reported, whether lost before or while following")
    func removed() async throws {
        let server = FakeSyncServer()
        server.join(space: "s1")
        server.join(space: "s2")
        let home = try await Self.signedUp(server)
        for space in ["s1", "s2"] { server.edit(.contacts, id: "c-\(space)", json: ["firstName": .string(space)], space: space) }
        // An earlier run held both spaces' replicas.
        let prefix = Scratch.path("allspaces-held-", suffix: "-")
        for space in ["s1", "s2"] { try await home.client(forSpace: space, replicaPath: prefix + space + ".sqlite").sync() }
        server.leave(space: "s2")

        let spaces = try SpaceSet(account: home, holding: ["s1", "s2"]) { prefix + $0 + ".sqlite" }
        let s1 = try spaces.client(forSpace: "s1")
        let s2 = try spaces.client(forSpace: "s2")
        #expect(try s2.all(Contact.self).count == 1 && s2.dateOfSync != nil)
        var updates = spaces.follow().makeAsyncIterator()
        let opening = try await Self.read(&updates) { if case .removed = $0 { true } else { false } }
        guard case .removed(let gone) = opening.last, case .spaces(let listing) = opening.first else { return #expect(Bool(false)) }
        #expect(gone == "s2" && listing.map(\.id) == ["fake-family", "s1"])
        #expect(try s2.all(Contact.self).isEmpty && s2.dateOfSync == nil)
        #expect(spaces.heldSpaces == ["s1"])

        server.leave(space: "s1")
        let later = try await Self.read(&updates) { if case .removed = $0 { true } else { false } }
        guard case .removed(let left) = later.last else { return }
        #expect(left == "s1")
        #expect(try s1.all(Contact.self).isEmpty && s1.dateOfSync == nil)
        #expect(spaces.heldSpaces.isEmpty)
        #expect(!later.contains { if case .removed("s2") = $0 { true } else { false } }, "reported once")
    }

    @Test("live mode of a space the account left erases the space's replica and ends, instead of retrying forever")
    func liveModeOfLeftSpace() async throws {
        let server = FakeSyncServer()
        server.join(space: "s1")
        let home = try await Self.signedUp(server)
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"], space: "s1")
        let s1 = try home.client(forSpace: "s1", replicaPath: Scratch.path("allspaces-live-left-"))
        _ = try await s1.sync()
        #expect(try s1.all(Contact.self).count == 1)
        server.leave(space: "s1")
        var updates = s1.statusUpdates.makeAsyncIterator()
        s1.startLive()
        // Live mode starts, then ends by itself.
        var started = false
        while let status = await updates.next() {
            if status.live { started = true } else if started { break }
        }
        #expect(try s1.all(Contact.self).isEmpty && s1.dateOfSync == nil)
        #expect(home.isSignedIn, "the account's session stays")
    }

    @Test("a token that stops working ends the stream and the session, as in live mode")
    func signedOut() async throws {
        let server = FakeSyncServer()
        let home = try await Self.signedUp(server)
        let spaces = try Self.spaceSet(home)
        var updates = spaces.follow().makeAsyncIterator()
        _ = try await Self.read(&updates) { if case .spaces = $0 { true } else { false } }
        server.revokeSessions()
        await #expect(throws: SyncClientError.notSignedIn) {
            while try await updates.next() != nil {}
        }
        #expect(!home.isSignedIn && !home.status.signedIn)
        await #expect(throws: SyncClientError.notSignedIn) {
            for try await _ in home.spaceEvents() {}
        }
    }

    /// Live mode's `GET /changes` over a script: the first connection sends one notice and ends, the second answers
    /// 401. Each connection's path and `Last-Event-ID` go to `connections`.
    final class LiveScript: HTTPTransport {
        let server = FakeSyncServer()
        let count = Mutex(0)
        let (connections, connected) = AsyncStream.makeStream(of: (path: String, lastEventID: String?).self)

        func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await server.send(call) }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            connected.yield((call.url.path + (call.url.query.map { "?" + $0 } ?? ""), call.headers["Last-Event-ID"]))
            let first = count.withLock { count in
                count += 1
                return count == 1
            }
            guard first else { return (401, AsyncThrowingStream { $0.finish() }) }
            let notice = "retry: 5\n\nevent: change\nid: n1\ndata: {\"date\": \"n1\"}\n\n"
            return (
                200,
                AsyncThrowingStream { continuation in
                    continuation.yield(Data(notice.utf8))
                    continuation.finish()
                }
            )
        }
    }

    @Test("live mode on the shared stream loop: a notice syncs, the reconnection resumes with Last-Event-ID, a 401 ends it")
    func liveMode() async throws {
        let script = LiveScript()
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("allspaces-live-"))
        configuration.transport = script
        configuration.pushDelay = nil
        configuration.liveDebounce = .milliseconds(1)
        configuration.liveMaximumBackoff = .milliseconds(10)
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        var connections = script.connections.makeAsyncIterator()
        client.startLive()
        let first = await connections.next()
        #expect(first?.path == "/api/v1/changes" && first?.lastEventID == nil)
        let second = await connections.next()
        #expect(second?.path == "/api/v1/changes" && second?.lastEventID == "n1", "after the notice's sync, no date: the event id")
        #expect(client.dateOfSync == "fake.1")
        for await status in client.statusUpdates where !status.live { break }
        #expect(!client.isSignedIn)
    }
}
