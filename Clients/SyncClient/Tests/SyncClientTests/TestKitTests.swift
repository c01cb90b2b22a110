import Foundation
import SyncClient
import SyncClientTesting
import Synchronization
import Testing

/// The test kit (`SyncClientTesting`): how an app's unit tests script a server. These are also its examples.
@Suite("Test kit: a scripted in-memory server")
struct TestKitTests {
    /// A client on a fresh replica, talking to `server`, writes waiting for `sync()`, retries instant. `transport`:
    /// another than the server itself (one that wraps it); `configure`: the test's settings on top.
    static func client(
        _ server: FakeSyncServer, transport: (any HTTPTransport)? = nil, configure: (inout SyncClientConfiguration) -> Void = { _ in }
    ) throws -> SyncClient {
        var configuration = SyncClientConfiguration(
            serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("testkit-"))
        configuration.transport = transport ?? server
        configuration.pushDelay = nil
        configuration.retryPolicy = RetryPolicy(attempts: 3, baseDelay: .milliseconds(1), sleep: { _ in })
        configure(&configuration)
        return try SyncClient(configuration: configuration)
    }

    @Test("example: a save reaches the server; another device's write reaches the replica")
    func roundTrip() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.save(Contact(id: "c1", firstName: "Ann"))
        try await client.sync()
        #expect(server.items(.contacts)["c1"]?["firstName"] == "Ann")
        server.edit(.contacts, id: "c2", json: ["firstName": "Bob"])
        try await client.sync()
        #expect(try client.all(Contact.self).map(\.id) == ["c1", "c2"])
    }

    @Test("example: an app's own model, served by the fake and synced by name")
    func ownModel() async throws {
        let model = ServerModel(
            name: "garden", digest: "test",
            collections: [
                .init(name: "plants", kind: .list, sync: "plantsync"),
                .init(name: "beds", kind: .paginated, sync: "bedsync", children: "sowings", order: "created", authored: true),
                .init(name: "sowings", kind: .child, parent: "beds", authored: true),
                .init(name: "garden", kind: .singleton, sync: "gardensync", scope: "family"),
            ])
        let server = FakeSyncServer(model: model)
        let client = try Self.client(server)
        try await client.signUp(family: "Green", username: "alice", password: "password1")
        #expect(client.knownModel == model)
        try await client.save("plants", id: "tomato", json: ["name": "Tomato"])
        try await client.save("beds", id: "b1", json: ["name": "South"])
        try await client.save("sowings", id: "s1", parent: "b1", json: ["plant": "tomato"])
        try await client.save("garden", id: "any", json: ["name": "Allotment 12"])
        try await client.sync()
        server.edit("plants", id: "basil", json: ["name": "Basil"])
        try await client.sync()
        #expect(try client.items("plants").compactMap { $0["name"]?.stringValue } == ["Basil", "Tomato"])
        #expect(try client.items("sowings", parent: "b1").first?["author"] != nil)
        #expect(try client.item("garden", id: server.familyID)?["name"] == "Allotment 12")
        #expect(try client.items(.accounts).count == 1, "the family singleton's endpoint carries the account profiles")
        #expect(server.calls.contains("GET /plantsync") && server.calls.contains("GET /gardensync"))
    }

    @Test("example: a busy server (503) is retried; a server that stays away leaves the write queued")
    func failures() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
        server.failNext(2)
        try await client.sync()
        #expect(server.items(.contacts)["c1"] != nil)
        server.isOffline = true
        try await client.save(.contacts, id: "c2", json: ["firstName": "Bob"])
        await #expect(throws: SyncClientError.self) { try await client.sync() }
        #expect(client.status.state == .offline && client.status.pendingWrites == 1)
        server.isOffline = false
        try await client.sync()
        #expect(server.items(.contacts)["c2"] != nil && client.status.pendingWrites == 0)
    }

    @Test("example: edits of different fields merge by themselves; the same field goes to the app's typed handler")
    func conflict() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "notes": "v1"])
        try await client.sync()
        let seen = Mutex<ModelConflict<Contact>?>(nil)
        try client.setConflictHandler(Contact.self) { conflict in
            seen.withLock { $0 = conflict }
            guard var merged = conflict.server else { return .keepServer }
            merged.notes = [conflict.server?.notes, conflict.local?.notes].compactMap { $0 }.joined(separator: " / ")
            return .merged(merged)
        }
        // Here the last name, on another device the notes: both kept, no question asked, written in the journal.
        var ann = try #require(try client.all(Contact.self).first)
        ann.lastName = "Martin"
        try await client.save(ann)
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "notes": "v2"])
        #expect(try await client.sync().conflicts == 1)
        #expect(seen.withLock { $0 } == nil)
        #expect(server.items(.contacts)["c1"]?["lastName"] == "Martin" && server.items(.contacts)["c1"]?["notes"] == "v2")
        #expect(try client.conflictJournal().map(\.resolution) == [.merged])
        // Both changed the notes: the handler decides.
        ann = try #require(try client.all(Contact.self).first)
        ann.notes = "mine"
        try await client.save(ann)
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "lastName": "Martin", "notes": "theirs"])
        try await client.sync()
        #expect(seen.withLock { $0?.local?.notes } == "mine" && seen.withLock { $0?.server?.notes } == "theirs")
        #expect(server.items(.contacts)["c1"]?["notes"] == "theirs / mine")
        let last = try #require(try client.conflictJournal().last)
        #expect(last.resolution == .handlerMerged && last.fields == ["notes"])
    }
}
