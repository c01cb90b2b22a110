import Foundation
import SyncClientTesting
import Testing

@testable import SyncClient

/// Media an item names on another server (a CDN): fetched without the session's token, cached, refused over plain
/// http to another machine.
@Suite("Media of other servers")
struct ExternalMediaTests {
    /// The fake server for this server's calls, the real network for others, every call recorded.
    final class RoutingTransport: HTTPTransport {
        let fake = FakeSyncServer()
        let network = URLSessionTransport()
        let calls = Locked<[HTTPCall]>([])

        func send(_ call: HTTPCall) async throws -> HTTPAnswer {
            calls.withLock { $0.append(call) }
            return call.url.host == "fake.example" ? try await fake.send(call) : try await network.send(call)
        }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            calls.withLock { $0.append(call) }
            return call.url.host == "fake.example" ? try await fake.stream(call) : try await network.stream(call)
        }
    }

    @Test("fetched once, without the token, then read from the cache; plain http to another machine refused")
    func external() async throws {
        let bytes = Data((0..<50_000).map { UInt8($0 % 251) })
        let cdn = try EndlessHTTPServer(body: bytes)
        let transport = RoutingTransport()
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("external-"))
        configuration.transport = transport
        configuration.pushDelay = nil
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        let url = "http://127.0.0.1:\(cdn.port)/cat.jpg"
        let files = try await withThrowingTaskGroup(of: URL.self) { group in
            for _ in 0..<4 { group.addTask { try await client.media(url) } }
            return try await group.reduce(into: [URL]()) { $0.append($1) }
        }
        #expect(try Set(files).count == 1 && Data(contentsOf: files[0]) == bytes)
        #expect(try Data(contentsOf: try await client.media(url)) == bytes)
        let outside = transport.calls.withLock { $0.filter { $0.url.host != "fake.example" } }
        #expect(outside.count == 1, "one download for four views and a later read")
        #expect(outside.first?.headers["Authorization"] == nil, "the session's token stays with its server")
        await #expect(throws: SyncClientError.self) { try await client.media("http://cdn.example.com/cat.jpg") }
        cdn.close()
    }
}
