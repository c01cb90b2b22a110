import Foundation
import GRDB
import Testing

@testable import SyncClient

/// The whole client with no server reachable (a closed local port, not a stand-in server): local writes, the queue
/// across restarts, status, observation, logout. Tests against a real server live in the server package.
@Suite("Client without a server")
struct OfflineClientTests {
    /// A client whose server is a closed port, signed in with a stored session, retrying fast.
    /// `model`: the one the app was built with (the server's is never read here).
    static func client(
        path: String = Scratch.path("syncclient-offline-"), model: ServerModel? = .family
    ) throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, replicaPath: path)
        configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(1), sleep: { _ in })
        configuration.pushDelay = nil  // these tests read the queue
        configuration.model = model
        if try configuration.tokenStore.load() == nil {
            try configuration.tokenStore.save(ClientSession(token: "token", accountID: "acc", familyID: "fam"))
        }
        return try SyncClient(configuration: configuration)
    }

    @Test("offline: saves and deletes show at once, sync fails as offline, the queue survives a restart")
    func offlineWrites() async throws {
        let path = Scratch.path("syncclient-offline-")
        do {
            let client = try Self.client(path: path)
            #expect(client.isSignedIn)
            try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
            try await client.save(Contact(id: "c2", firstName: "Bob", emails: ["bob@example.org"]))
            try await client.save(Message(id: "m1", parentID: "t1", text: "hi"))
            try await client.delete(.contacts, id: "c1")
            #expect(try client.items(.contacts).map { $0["id"] } == ["c2"])
            #expect(try client.all(Contact.self).first?.emails == ["bob@example.org"])
            #expect(try client.all(Message.self, parent: "t1").map(\.parentID) == ["t1"])
            await #expect(throws: SyncClientError.self) { try await client.sync() }
            #expect(client.status.state == .offline)
            #expect(client.status.pendingWrites == 2)
            #expect(client.status.lastError != nil)
        }
        let restarted = try Self.client(path: path)
        #expect(try restarted.pendingOperations().map(\.id) == ["c2", "m1"])
        #expect(restarted.status.pendingWrites == 2)
        #expect(try restarted.item(.contacts, id: "c2")?["firstName"] == "Bob")
    }

    @Test("writes the SDK refuses before any request")
    func refusedLocally() async throws {
        let client = try Self.client()
        await #expect(throws: SyncClientError.self) { try await client.save(.messages, id: "m", json: ["text": "no parent"]) }
        await #expect(throws: SyncClientError.self) { try await client.save(.contacts, id: "c", parent: "p", json: [:]) }
        await #expect(throws: SyncClientError.self) { try await client.save(.accounts, id: "a", json: [:]) }
        await #expect(throws: SyncClientError.self) { try await client.delete(.family, id: "f") }
        await #expect(throws: SyncClientError.invalid("nope is not a collection of the model \"family\" (\(Self.familyNames))")) {
            try await client.save("nope", id: "n", json: [:])
        }
        #expect(try client.pendingOperations().isEmpty)
        // With no model known at all (a replica of SDK 0.2.0 not synced since), a write is queued as given: the
        // server checks it at push.
        let unknowing = try Self.client(model: nil)
        try await unknowing.save("recipes", id: "r1", json: ["title": "Soup"])
        #expect(try unknowing.pendingOperations().map(\.collection) == ["recipes"])
        #expect(try unknowing.items("recipes").map { $0["title"] } == ["Soup"])
    }

    static let familyNames = "accounts, comments, contacts, events, family, members, messages, places, settings, threads, wall"

    @Test("concurrent syncs join one flight")
    func singleFlight() async throws {
        let client = try Self.client()
        async let first: SyncReport? = try? client.sync()
        async let second: SyncReport? = try? client.sync()
        _ = await (first, second)
        #expect(client.status.state == .offline)
    }

    @Test("an observation redraws on a local write and sees empty results after logout; status updates flow")
    func observationAndLogout() async throws {
        let client = try Self.client()
        let updates = client.statusUpdates
        let observation = client.observeAll(Contact.self)
        var iterator = observation.makeAsyncIterator()
        #expect(try await iterator.next()?.isEmpty == true)
        try await client.save(Contact(id: "c1", firstName: "Ann"))
        var value = try await iterator.next()
        // GRDB may notify a value equal to the last one first; the write's value follows.
        while value?.isEmpty == true { value = try await iterator.next() }
        #expect(value?.map(\.id) == ["c1"])
        // Unsent writes block a plain logout while offline (the documented error, not `.offline`); discarding them signs
        // out and erases the replica.
        await #expect(throws: SyncClientError.unpushedWrites(try client.pendingOperations())) { try await client.logOut() }
        #expect(client.isSignedIn)
        try await client.logOut(discardingPendingWrites: true)
        #expect(!client.isSignedIn)
        value = try await iterator.next()
        while value?.isEmpty == false { value = try await iterator.next() }
        #expect(value?.isEmpty == true)
        #expect(try client.pendingOperations().isEmpty)
        var seen: [SyncStatus] = []
        for await status in updates {
            seen.append(status)
            if !status.signedIn { break }
        }
        #expect(seen.contains { $0.pendingWrites == 1 })
        await #expect(throws: SyncClientError.notSignedIn) { try await client.sync() }
    }

    @Test("an observation of one collection wakes for its own changes only, never twice for the same items")
    func observationScope() async throws {
        let client = try Self.client()
        let seen = Counter()
        let observer = Task {
            for try await contacts in client.observeAll(Contact.self) { seen.add(contacts.map(\.id)) }
        }
        defer { observer.cancel() }
        #expect(try await seen.wait { $0 == [[]] })
        // Writes to other collections: the contacts observation stays quiet.
        for n in 0..<20 { try await client.save(.events, id: "e\(n)", json: ["title": "E", "start": "2026-01-01T00:00:00Z"]) }
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
        #expect(try await seen.wait { $0 == [[], ["c1"]] }, "values: \(seen.values)")
        // The same items again (an identical save) yield nothing.
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.values == [[], ["c1"]])
    }

    /// The values an observation yielded.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [[String]] = []
        var values: [[String]] { lock.withLock { list } }
        func add(_ value: [String]) { lock.withLock { list.append(value) } }
        /// Waits up to 5 s for the values to satisfy `condition`.
        func wait(_ condition: ([[String]]) -> Bool) async throws -> Bool {
            for _ in 0..<250 {
                if condition(values) { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return condition(values)
        }
    }

    @Test("reset erases the data and keeps the session")
    func reset() async throws {
        let client = try Self.client()
        try await client.save(.places, id: "home", json: ["name": "Home"])
        try await client.reset()
        #expect(try client.items(.places).isEmpty)
        #expect(try client.pendingOperations().isEmpty)
        #expect(client.isSignedIn)
    }

    @Test("live mode against an unreachable server keeps retrying and stops at once")
    func liveStops() async throws {
        var configuration = SyncClientConfiguration(
            serverURL: URL(string: "http://127.0.0.1:9")!, replicaPath: Scratch.path("syncclient-live-"))
        configuration.liveMaximumBackoff = .milliseconds(20)
        try configuration.tokenStore.save(ClientSession(token: "token", accountID: "acc", familyID: "fam"))
        let client = try SyncClient(configuration: configuration)
        client.startLive()
        #expect(client.status.live)
        try await Task.sleep(for: .milliseconds(100))
        #expect(!client.status.liveConnected)
        await client.stopLive()
        #expect(!client.status.live)
    }
}
