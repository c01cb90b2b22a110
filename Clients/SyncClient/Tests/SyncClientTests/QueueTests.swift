import Foundation
import GRDB
import Testing

@testable import SyncClient

/// The persisted write queue: compression per item, order, batches within the server's limits, and recognising a
/// write that already landed.
@Suite("Write queue")
struct QueueTests {
    static func pending(_ replica: Replica) throws -> [PendingOperation] {
        try replica.pool.read { db in try Replica.pending(db) }
    }

    @Test("create + update is one PUT of the last state")
    func createUpdate() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": "1"])
            try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": "2", "notes": "n"])
        }
        let pending = try Self.pending(replica)
        #expect(pending.count == 1)
        #expect(pending[0].kind == .put)
        #expect(pending[0].body == ["id": "a", "firstName": "2", "notes": "n"])
        #expect(pending[0].revision == 2)
    }

    @Test("create + delete is nothing at all")
    func createDelete() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.save(db, .contacts, id: "b", parent: "", ["firstName": "x"])
            try Replica.save(db, .contacts, id: "b", parent: "", ["firstName": "y"])
            try Replica.delete(db, .contacts, id: "b", parent: "")
        }
        #expect(try Self.pending(replica).isEmpty)
        #expect(try Golden.ids(replica, .contacts).isEmpty)
    }

    @Test("update + delete of a server item is one DELETE; delete then save again is a PUT")
    func updateDelete() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.storeServer(db, .contacts, ["id": "old", "firstName": "Old", "modified": "m"], etag: "\"4\"")
            try Replica.save(db, .contacts, id: "old", parent: "", ["firstName": "New"])
            try Replica.delete(db, .contacts, id: "old", parent: "")
        }
        var pending = try Self.pending(replica)
        #expect(pending.map(\.kind) == [.delete])
        #expect(pending[0].body == nil)
        #expect(try Golden.ids(replica, .contacts).isEmpty)
        #expect(try replica.pool.read { db in try Replica.base(db, pending[0]).etag } == "\"4\"")
        try replica.pool.write { db in try Replica.save(db, .contacts, id: "old", parent: "", ["firstName": "Back"]) }
        pending = try Self.pending(replica)
        #expect(pending.map(\.kind) == [.put])
        #expect(try Golden.ids(replica, .contacts) == ["old"])
    }

    @Test("the queue keeps the order of first edits across items and collections (a parent before its children)")
    func order() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.save(db, .threads, id: "t", parent: "", ["title": "T"])
            try Replica.save(db, .messages, id: "m", parent: "t", ["text": "hello"])
            try Replica.save(db, .contacts, id: "c", parent: "", ["firstName": "C"])
            try Replica.save(db, .threads, id: "t", parent: "", ["title": "T2"])
        }
        let pending = try Self.pending(replica)
        #expect(pending.map(\.id) == ["t", "m", "c"])
        #expect(pending[1].parent == "t")
        #expect(try Golden.ids(replica, .messages, parent: "t") == ["m"])
    }

    @Test("the queue survives closing and reopening the replica")
    func persisted() throws {
        let path = Scratch.path("syncclient-queue-")
        do {
            let replica = try Replica(path: path)
            try replica.pool.write { db in try Replica.save(db, .places, id: "home", parent: "", ["name": "Home"]) }
        }
        let reopened = try Replica(path: path)
        #expect(try Self.pending(reopened).map(\.id) == ["home"])
    }

    @Test("a landed write clears its entry unless an edit came after the push began")
    func landed() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": "1"]) }
        let pushed = try Self.pending(replica)[0]
        try replica.pool.write { db in try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": "2"]) }
        try replica.pool.write { db in
            try Replica.landed(db, pushed, .contacts, server: ["id": "a", "firstName": "1", "modified": "m1"], etag: "\"7\"")
        }
        let pending = try Self.pending(replica)
        #expect(pending.count == 1 && pending[0].body?["firstName"] == "2", "the later edit stays queued")
        #expect(try replica.pool.read { db in try Replica.base(db, pending[0]).etag } == "\"7\"")
        try replica.pool.write { db in
            try Replica.landed(db, pending[0], .contacts, server: ["id": "a", "firstName": "2", "modified": "m2"], etag: "\"8\"")
        }
        #expect(try Self.pending(replica).isEmpty)
        #expect(try replica.pool.read { db in try Replica.visibleItem(db, .contacts, id: "a") }?["modified"] == "m2")
    }

    @Test("a refused write moves to the failed list and its local edit is undone")
    func refused() throws {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.save(db, .contacts, id: "bad", parent: "", ["nickname": "x"])
            try Replica.save(db, .contacts, id: "good", parent: "", ["firstName": "ok"])
        }
        let bad = try Self.pending(replica)[0]
        try replica.pool.write { db in try Replica.refused(db, bad, status: 400, code: "unknown_field", detail: "nickname") }
        #expect(try Self.pending(replica).map(\.id) == ["good"])
        let failed = try replica.pool.read { db in try Replica.failed(db) }
        #expect(failed.map(\.code) == ["unknown_field"])
        #expect(try Golden.ids(replica, .contacts) == ["good"])
    }

    @Test("batches stay within groupMaxRequests and bodyMaxBytes, in order")
    func batches() throws {
        let operations = (0..<45).map { index in
            PendingOperation(
                collection: .contacts, parent: nil, id: "c\(index)", kind: .put,
                body: ["firstName": .string(String(repeating: "x", count: index == 30 ? 3000 : 10))], revision: 1)
        }
        let batches = SyncClient.batches(operations, limits: .init(groupMaxRequests: 20, nbMax: 500, maxChildren: 100, bodyMaxBytes: 4096))
        #expect(batches.flatMap { $0 }.map(\.id) == operations.map(\.id))
        #expect(batches.allSatisfy { $0.count <= 20 })
        #expect(batches.allSatisfy { batch in batch.reduce(0) { $0 + ($1.body?.jsonText.utf8.count ?? 0) } <= 4096 })
    }

    @Test(
        "a retried write whose first attempt landed is recognised",
        arguments: [
            (["firstName": "A"] as JSONObject, ["id": "a", "firstName": "A", "lastName": .null, "emails": [], "modified": "m"] as JSONObject, true),
            (
                ["firstName": "A", "lastName": .null] as JSONObject, ["id": "a", "firstName": "A", "lastName": .null, "modified": "m"] as JSONObject,
                true
            ),
            (["firstName": "A"] as JSONObject, ["id": "a", "firstName": "B", "modified": "m"] as JSONObject, false),
            (["latitude": 1] as JSONObject, ["id": "a", "latitude": 1.0, "modified": "m"] as JSONObject, true),
        ])
    func alreadyThere(local: JSONObject, server: JSONObject, expected: Bool) {
        let op = PendingOperation(collection: .contacts, parent: nil, id: "a", kind: .put, body: local, revision: 1)
        #expect(SyncClient.alreadyThere(op, .contacts, server: server) == expected)
        let delete = PendingOperation(collection: .contacts, parent: nil, id: "a", kind: .delete, body: nil, revision: 1)
        #expect(SyncClient.alreadyThere(delete, .contacts, server: nil))
        #expect(!SyncClient.alreadyThere(delete, .contacts, server: server))
    }
}
