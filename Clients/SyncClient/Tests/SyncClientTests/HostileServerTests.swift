import Foundation
import GRDB
import SyncClientTesting
import Testing

@testable import SyncClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Changed and hostile servers (issue 40, item 7): limits read again when they may have changed, a queue split to fit
/// them, a write that can never fit set aside, and every answer and event read with a size cap. Every wait is for an
/// event; a run that hangs fails at the time limit.
@Suite("Changed and hostile servers", .timeLimit(.minutes(10)))
struct HostileServerTests {
    /// A client of `server` on `path`, writes waiting for `push()` or `sync()`, retries and reconnections at once.
    static func client(
        _ server: any HTTPTransport, path: String = Scratch.path("hostile-"), answerMaxBytes: Int? = nil
    ) throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: path)
        configuration.transport = server
        configuration.pushDelay = nil
        configuration.liveMaximumBackoff = .milliseconds(10)
        configuration.retryPolicy = RetryPolicy(attempts: 3, baseDelay: .milliseconds(1), sleep: { _ in })
        if let answerMaxBytes { configuration.answerMaxBytes = answerMaxBytes }
        return try SyncClient(configuration: configuration)
    }

    /// The limits the replica keeps (nil: none, the next use reads them).
    static func storedLimits(_ client: SyncClient) throws -> ServerDescription.Limits? {
        try client.replica.pool.read { db in try Replica.meta(db, MetaKey.limits) }.map {
            try JSONDecoder().decode(ServerDescription.Limits.self, from: Data($0.utf8))
        }
    }

    /// Whether `error` is the SDK's `answer_too_large`.
    static func tooLarge(_ error: any Error) -> Bool {
        (error as? SyncClientError)?.isAnswerTooLarge == true
    }

    @Test("limits are read at sign-in, again when a group is refused (invalid_group) and when the model changed; a logout forgets them")
    func limitsRefreshed() async throws {
        let path = Scratch.path("hostile-limits-")
        let server = FakeSyncServer()
        let client = try Self.client(server, path: path)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        #expect(server.calls.filter { $0 == "GET /" }.count == 1, "read at sign-in")
        #expect(try Self.storedLimits(client)?.groupMaxRequests == 20)

        // An operator lowers --group-max-requests: a group of the kept 20 is refused, the limits are read again, and the
        // queue is cut to fit them: the refused 20 in 10 groups, then the other 5 in 3.
        server.limits.groupMaxRequests = 2
        for n in 0..<25 { try await client.save(.contacts, id: "c\(n)", json: ["firstName": .string("N\(n)")]) }
        let groups = server.calls.filter { $0 == "POST /group" }.count
        let report = try await client.push()
        #expect(report.pushed == 25 && report.failed == 0)
        #expect(server.items(.contacts).count == 25)
        #expect(server.calls.filter { $0 == "POST /group" }.count - groups == 1 + 10 + 3)
        #expect(try client.failedOperations().isEmpty)
        #expect(server.calls.filter { $0 == "GET /" }.count == 2, "read again after the refusal")
        #expect(try Self.storedLimits(client)?.groupMaxRequests == 2)

        // A sync that needs more calls than the server now takes says so (it is not refused by the server forever).
        await #expect(throws: SyncClientError.invalid("the server takes 2 calls per group; a sync needs \(ServerModel.family.endpoints.count)")) {
            try await client.sync()
        }
        server.limits.groupMaxRequests = 20
        try await client.logOut()
        #expect(try Self.storedLimits(client) == nil, "a logout forgets them")

        // A changed model (another server on the same replica) has the limits read again.
        try await client.logIn(username: "alice", password: "password1")
        #expect(try Self.storedLimits(client)?.groupMaxRequests == 20)
        let garden = ServerModel(
            name: "garden", digest: "test",
            collections: [
                .init(name: "plants", kind: .list, sync: "plantsync"), .init(name: "garden", kind: .singleton, sync: "gardensync", scope: "family"),
            ])
        let redeployed = FakeSyncServer(model: garden)
        redeployed.limits.groupMaxRequests = 3
        let relaunched = try Self.client(redeployed, path: path)
        try await relaunched.sync()
        #expect(relaunched.knownModel == garden)
        #expect(redeployed.calls.filter { $0 == "GET /" }.count == 1)
        #expect(try Self.storedLimits(relaunched)?.groupMaxRequests == 3)
    }

    @Test("a write too large for the server's body limit goes to failedOperations with its 413; the writes around it land")
    func writeThatNeverFits() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.limits.bodyMaxBytes = 4096
        try await client.save(.contacts, id: "a", json: ["firstName": "A"])
        try await client.save(.contacts, id: "big", json: ["firstName": "B", "notes": .string(String(repeating: "n", count: 9000))])
        try await client.save(.contacts, id: "c", json: ["firstName": "C"])
        let report = try await client.push()
        #expect(report.pushed == 2 && report.failed == 1)
        let failed = try client.failedOperations()
        #expect(failed.map(\.id) == ["big"])
        #expect(failed.first?.status == 413 && failed.first?.code == .payloadTooLarge)
        #expect(Set(server.items(.contacts).keys) == ["a", "c"])
        #expect(try client.pendingOperations().isEmpty && client.status.failedWrites == 1)
        // The next push and sync go through: nothing is stuck behind it.
        try await client.save(.contacts, id: "d", json: ["firstName": "D"])
        try await client.sync()
        #expect(server.items(.contacts)["d"] != nil)
        #expect(try client.items(.contacts).compactMap { $0["id"]?.stringValue }.sorted() == ["a", "c", "d"])
    }

    @Test("limits the split still misses (its estimate is above a tiny body limit): the refused group is halved until it fits")
    func halved() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.limits.bodyMaxBytes = 300
        for n in 0..<4 { try await client.save(.contacts, id: "h\(n)", json: ["firstName": "H"]) }
        let report = try await client.push()
        #expect(report.pushed == 4 && report.failed == 0)
        #expect(server.items(.contacts).count == 4)
        // One group of 4 (refused); the limits read again split it the same way, so it is halved: two groups of 2.
        #expect(server.calls.filter { $0 == "POST /group" }.count == 3)
    }

    @Test("an answer over answerMaxBytes fails with answer_too_large: a whole one, and one value of a sync's answer")
    func answerCap() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server, answerMaxBytes: 64 * 1024)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        // A transport that read it whole anyway (the fake does): the SDK still refuses it.
        server.answerNext(HTTPAnswer(status: 200, headers: [:], body: Data(repeating: UInt8(ascii: " "), count: 64 * 1024 + 1)))
        await #expect(performing: { try await client.serverModel(refresh: true) }, throws: Self.tooLarge)
        // A sync whose answer holds one item over the limit: nothing is applied, the date does not move.
        try await client.sync()
        let date = client.dateOfSync
        server.edit(.contacts, id: "small", json: ["firstName": "S"])
        server.edit(.contacts, id: "huge", json: ["notes": .string(String(repeating: "n", count: 80 * 1024))])
        await #expect(performing: { try await client.sync() }, throws: Self.tooLarge)
        #expect(client.dateOfSync == date)
        #expect(try client.items(.contacts).isEmpty)
        #expect(client.status.state == .error(SyncClientError.answerTooLarge(status: 200, limit: 64 * 1024, what: "a value of the answer")))
        // Within a larger limit the same answer is taken.
        server.remove(.contacts, id: "huge")
        try await client.sync()
        #expect(try client.items(.contacts).map { $0["id"] } == ["small"])
    }

    @Test("a body read whole stops at its limit")
    func collectedLimit() async throws {
        let pieces = AsyncThrowingStream<Data, any Error> { continuation in
            for _ in 0..<4 { continuation.yield(Data(count: 1000)) }
            continuation.finish()
        }
        let answer = HTTPStreamedAnswer(status: 502, headers: [:], body: pieces)
        await #expect(performing: { try await answer.collected(limit: 3999) }, throws: Self.tooLarge)
        let again = HTTPStreamedAnswer(HTTPAnswer(status: 200, headers: [:], body: Data(count: 4000)))
        #expect(try await again.collected(limit: 4000).body.count == 4000)
    }

    @Test("URLSessionTransport stops reading an answer that never ends at its limit, and closes the connection")
    func urlSessionCap() async throws {
        let server = try EndlessHTTPServer()
        defer { server.close() }
        var ended = server.ended.makeAsyncIterator()
        let url = URL(string: "http://127.0.0.1:\(server.port)/api/v1/model")!
        let transport = URLSessionTransport()
        let limit = 1024 * 1024
        await #expect(performing: { try await transport.send(HTTPCall(method: "GET", url: url, maximumAnswerBytes: limit)) }, throws: Self.tooLarge)
        // The client closed the connection (the server never stops by itself before its ceiling).
        let written = await ended.next() ?? .max
        #expect(written < EndlessHTTPServer.safetyBytes, "written: \(written)")
        // The streamed download stops the same way.
        let download = try await transport.download(HTTPCall(method: "POST", url: url, maximumAnswerBytes: limit))
        await #expect(performing: { try await download.collected() }, throws: Self.tooLarge)
        #expect(await ended.next() ?? .max < EndlessHTTPServer.safetyBytes)
        // Through a client: the configuration's limit reaches the transport.
        var configuration = SyncClientConfiguration(
            serverURL: URL(string: "http://127.0.0.1:\(server.port)")!, replicaPath: Scratch.path("hostile-urlsession-"))
        configuration.answerMaxBytes = limit
        configuration.retryPolicy = RetryPolicy(attempts: 1, sleep: { _ in })
        let client = try SyncClient(configuration: configuration)
        await #expect(performing: { try await client.serverModel(refresh: true) }, throws: Self.tooLarge)
        #expect(await ended.next() ?? .max < EndlessHTTPServer.safetyBytes)
    }

    @Test("URLSessionTransport reads a whole answer within its limit: status, headers and body")
    func urlSessionWhole() async throws {
        let body = Data(#"{"version":"test","limits":{"groupMaxRequests":7,"nbMax":500,"maxChildren":100,"bodyMaxBytes":4096}}"#.utf8)
        let server = try EndlessHTTPServer(body: body)
        defer { server.close() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/api/v1/")!
        let transport = URLSessionTransport()
        let answer = try await transport.send(HTTPCall(method: "GET", url: url, maximumAnswerBytes: body.count))
        #expect(answer.status == 200 && answer.body == body && answer.header("x-answer") == "whole")
        // A second call on the same session, with no limit.
        #expect(try await transport.send(HTTPCall(method: "GET", url: url)).body == body)
        // Just over the limit: refused.
        await #expect(
            performing: { try await transport.send(HTTPCall(method: "GET", url: url, maximumAnswerBytes: body.count - 1)) }, throws: Self.tooLarge)
    }

    @Test("URLSessionTransport's calls and downloads share the session's connections: a sync opens none of its own")
    func urlSessionReusesConnections() async throws {
        let body = Data(#"{"responses":[]}"#.utf8)
        let server = try EndlessHTTPServer(body: body, keepAlive: true)
        defer { server.close() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/api/v1/group")!
        let transport = URLSessionTransport()
        #expect(try await transport.send(HTTPCall(method: "GET", url: url)).body == body)
        for _ in 0..<3 {
            let download = try await transport.download(HTTPCall(method: "POST", url: url, body: Data(#"{"requests":[]}"#.utf8)))
            #expect(try await download.collected().body == body)
        }
        // Each download had its own session, so its own connection, before (4 here).
        #expect(server.accepted == 1)
    }

    @Test("the event parser fails on a line or an event over its limit, and forgets them")
    func eventParserBounded() throws {
        var parser = ServerEventParser(maximumEventBytes: 1000)
        #expect(try parser.feed(Array("event: change\ndata: 1\n\n".utf8)).map(\.data) == ["1"])
        // A line that never ends, fed in pieces: refused once it passes the limit, never held past it.
        let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 300)
        #expect(try parser.feed(Array("data: ".utf8) + piece).isEmpty)
        #expect(try parser.feed(piece).isEmpty)
        #expect(try parser.feed(piece).isEmpty)
        #expect(throws: SyncClientError.answerTooLarge(status: 200, limit: 1000, what: "a line of the event stream")) { try parser.feed(piece) }
        // An event of many short data lines, never ended by a blank line.
        var lines = ServerEventParser(maximumEventBytes: 1000)
        #expect(throws: SyncClientError.answerTooLarge(status: 200, limit: 1000, what: "an event of the event stream")) {
            for _ in 0..<200 { _ = try lines.feed(Array("data: 0123456789\n".utf8)) }
        }
        // One long line in a single piece.
        var single = ServerEventParser(maximumEventBytes: 1000)
        #expect(throws: SyncClientError.answerTooLarge(status: 200, limit: 1000, what: "a line of the event stream")) {
            try single.feed(Array("id: ".utf8) + [UInt8](repeating: UInt8(ascii: "1"), count: 2000) + [10])
        }
        // After a failure the parser starts clean.
        #expect(try parser.feed(Array("\ndata: 2\n\n".utf8)).map(\.data) == ["2"])
    }

    @Test("live mode drops a stream whose line never ends and opens it again; it never reads far past the parser's limit")
    func endlessEventLine() async throws {
        let server = EndlessEvents(FakeSyncServer())
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        var connections = server.connections.makeAsyncIterator()
        client.startLive()
        #expect(await connections.next() != nil)
        #expect(await connections.next() != nil, "opened again after the first was dropped")
        await client.stopLive()
        // 1 MiB at most per line: the 16th piece of 64 KiB (the first with "data: " before it) goes past it.
        #expect(server.piecesPerConnection.allSatisfy { $0 <= 17 }, "pieces: \(server.piecesPerConnection)")
        #expect(server.piecesPerConnection.first == 16)
    }
}

/// A transport that answers as the fake server does, except `GET /changes`: a stream of one line that never ends,
/// in pieces of 64 KiB handed only as they are read. Each connection is reported on `connections`.
final class EndlessEvents: HTTPTransport {
    let server: FakeSyncServer
    let connections: AsyncStream<Void>
    private let opened: AsyncStream<Void>.Continuation
    private let pieces = Locked<[Int]>([])
    /// The pieces each connection's consumer took, in connection order.
    var piecesPerConnection: [Int] { pieces.withLock { $0 } }

    init(_ server: FakeSyncServer) {
        self.server = server
        (connections, opened) = AsyncStream.makeStream(of: Void.self)
    }

    func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await server.send(call) }

    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        guard call.url.path.hasSuffix("/changes") else { return try await server.stream(call) }
        let index = pieces.withLock { counts in
            counts.append(0)
            return counts.count - 1
        }
        opened.yield()
        let pieces = pieces
        let line = Data("data: ".utf8)
        let filler = Data(repeating: UInt8(ascii: "x"), count: 64 * 1024)
        let bytes = AsyncThrowingStream<Data, any Error> {
            let taken = pieces.withLock { counts in
                counts[index] += 1
                return counts[index]
            }
            // A safety stop far past any sane limit.
            guard taken <= 1024 else { return nil }
            return taken == 1 ? line + filler : filler
        }
        return (200, bytes)
    }
}
