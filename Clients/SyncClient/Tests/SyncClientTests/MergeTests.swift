import Foundation
import SyncClientTesting
import Testing

@testable import SyncClient

/// Field-level three-way merges (issue 40, item 2): a typed save goes with its base's ETag; on a conflict the fields
/// only one side changed merge by themselves, the server keeps a field both changed unless the handler decides in
/// time, and every outcome is in the journal, undoable.
@Suite("Field-level merges")
struct MergeTests {
    static func client(_ server: FakeSyncServer, handlerTimeout: Duration = .seconds(30)) throws -> SyncClient {
        try TestKitTests.client(server) { $0.conflictHandlerTimeout = handlerTimeout }
    }

    @Test("no handler: the server keeps the field both changed, the local edit of the others lands; undo puts it back")
    func serverKeepsConflictingFields() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "lastName": "Lee", "notes": "v1"])
        try await client.sync()
        var ann = try #require(try client.all(Contact.self).first)
        ann.notes = "phone"
        ann.lastName = "Martin"
        try await client.save(ann)
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "lastName": "Lee", "notes": "laptop"])
        try await client.sync()
        #expect(server.items(.contacts)["c1"]?["notes"] == "laptop" && server.items(.contacts)["c1"]?["lastName"] == "Martin")
        let record = try #require(try client.conflictJournal().first)
        #expect(record.resolution == .serverKeptFields && record.fields == ["notes"])
        #expect(record.local?["notes"] == "phone" && record.server?["notes"] == "laptop" && record.result?["notes"] == "laptop")
        // The user wants theirs back.
        try await client.undo(record)
        try await client.sync()
        #expect(server.items(.contacts)["c1"]?["notes"] == "phone")
        try await client.clearConflictJournal()
        #expect(try client.conflictJournal().count == 0)
    }

    @Test("a handler that does not answer in time holds nothing up: the server's value is kept", .timeLimit(.minutes(10)))
    func slowHandler() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server, handlerTimeout: .milliseconds(50))
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        try await client.sync()
        // Asks a user who never answers: it returns only once the SDK has given up and cancelled it, and says so.
        let (cancelled, told) = AsyncStream.makeStream(of: Void.self)
        client.setConflictHandler(.contacts) { _ in
            let (never, end) = AsyncStream.makeStream(of: Void.self)
            await withTaskCancellationHandler {
                for await _ in never {}
            } onCancel: {
                end.finish()
            }
            told.yield()
            return .keepLocal
        }
        try await client.save(.contacts, id: "c1", json: ["firstName": "Mine"])
        server.edit(.contacts, id: "c1", json: ["firstName": "Theirs"])
        let report = try await client.sync()
        #expect(report.conflicts == 1 && server.items(.contacts)["c1"]?["firstName"] == "Theirs")
        #expect(try client.conflictJournal().map(\.resolution) == [.serverKeptFields])
        // The handler's task did not outlive the decision: it was cancelled.
        var iterator = cancelled.makeAsyncIterator()
        #expect(await iterator.next() != nil)
    }

    @Test("the merge, field by field")
    func fieldMerge() {
        let merge = FieldMerge(
            base: ["a": 1, "b": 1, "c": 1, "modified": "t0"], local: ["a": 2, "b": 1, "c": 3, "modified": "t0"],
            server: ["a": 1, "b": 2, "c": 4, "modified": "t1"], ignored: ["modified"])
        #expect(merge.merged == ["a": 2, "b": 2, "c": 4, "modified": "t1"])
        #expect(merge.conflicting == ["c"] && merge.localChanged == ["a", "c"])
        // Both set the same value: no conflict.
        #expect(FieldMerge(base: ["a": 1], local: ["a": 2], server: ["a": 2], ignored: []).conflicting.isEmpty)
    }
}
