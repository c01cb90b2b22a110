import Foundation
import GRDB
import Testing

@testable import SyncClient

/// What the SDK does without a server: digests, event parsing, the queue's folding, the rules of applying answers,
/// the token file.
@Suite("SDK units")
struct SyncClientUnitTests {
    static func replica() throws -> Replica {
        try Replica(path: NSTemporaryDirectory() + "syncclient-unit-\(UUID().uuidString).sqlite")
    }

    @Test("SHA-256 test vectors")
    func sha256() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA256.hex(long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("server-sent events split anywhere, with CRLF, comments, id and retry")
    func serverEvents() {
        var parser = ServerEventParser()
        let text =
            "retry: 2000\r\n\r\n: ping\n\nid: d1\nevent: change\ndata: {\"date\":\"d1\"}\n\nevent: change\r\nid: d2\r\ndata: {\"date\":\"d2\"}\r\n\r\n"
        var events: [ServerEvent] = []
        for byte in Array(text.utf8) { events += parser.feed([byte]) }
        #expect(events.map(\.id) == ["d1", "d2"])
        #expect(events.map(\.data) == [#"{"date":"d1"}"#, #"{"date":"d2"}"#])
        #expect(events.allSatisfy { $0.event == "change" })
    }

    @Test("queued writes fold per item, in the same transaction as the edit")
    func folding() throws {
        let replica = try Self.replica()
        try replica.pool.write { db in
            try Replica.storeServer(db, .contacts, ["id": .string("old"), "firstName": .string("Old"), "modified": .string("m")])
            try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": .string("1")])
            try Replica.save(db, .contacts, id: "a", parent: "", ["firstName": .string("2")])
            try Replica.save(db, .contacts, id: "b", parent: "", ["firstName": .string("x")])
            try Replica.delete(db, .contacts, id: "b", parent: "")
            try Replica.save(db, .contacts, id: "old", parent: "", ["firstName": .string("New")])
            try Replica.delete(db, .contacts, id: "old", parent: "")
        }
        let pending = try replica.pool.read { db in try Replica.pending(db) }
        #expect(pending.map(\.id) == ["a", "old"])
        #expect(pending.map(\.kind) == [.put, .delete])
        #expect(pending[0].body?["firstName"] == .string("2"))
        let visible = try replica.pool.read { db in try Replica.visibleItems(db, .contacts) }
        #expect(visible.map { $0["id"] } == [.string("a")])
    }

    @Test("answers: sync false replaces, crop keeps the fresh page, children replaced, a pending edit stays on top")
    func applying() throws {
        let replica = try Self.replica()
        func thread(_ id: String, _ at: String, messages: [String] = []) -> JSONValue {
            .object([
                "id": .string(id), "title": .string(id), "lastMessageAt": .string(at), "modified": .string(at),
                "messages": .array(messages.map { .object(["id": .string($0), "text": .string($0), "created": .string(at)]) }),
                "nomore": .bool(true),
            ])
        }
        try replica.pool.write { db in
            try Replica.applyPaginated(
                db, .threads,
                .object([
                    "sync": .bool(false), "crop": .bool(false), "nomore": .bool(false), "deleted": .array([]),
                    "updated": .array([thread("t3", "2026-01-03", messages: ["m1"]), thread("t2", "2026-01-02"), thread("t1", "2026-01-01")]),
                ]))
            try Replica.save(db, .threads, id: "t2", parent: "", ["title": .string("mine")])
        }
        var ids = try replica.pool.read { db in try Replica.visibleItems(db, .threads).map { $0["id"]!.stringValue! } }
        #expect(ids == ["t3", "t2", "t1"])
        #expect(try replica.pool.read { db in try Replica.visibleItems(db, .messages, parent: "t3").count } == 1)
        try replica.pool.write { db in
            // A crop: the list is only the fresh page; t2 keeps its unsent edit.
            try Replica.applyPaginated(
                db, .threads,
                .object([
                    "sync": .bool(true), "crop": .bool(true), "nomore": .bool(false), "deleted": .array([.string("t1")]),
                    "updated": .array([thread("t4", "2026-01-04", messages: ["m2", "m3"])]),
                ]))
        }
        ids = try replica.pool.read { db in try Replica.visibleItems(db, .threads).map { $0["id"]!.stringValue! } }
        #expect(ids == ["t4", "t2"])
        #expect(try replica.pool.read { db in try Replica.visibleItems(db, .messages, parent: "t3").isEmpty })
        #expect(try replica.pool.read { db in try Replica.visibleItem(db, .threads, id: "t2")?["title"] } == .string("mine"))
        #expect(try replica.pool.read { db in try Replica.lastServerID(db, .threads) } == "t4")
    }

    @Test("the token file is private (0600)")
    func tokenFile() throws {
        let path = NSTemporaryDirectory() + "syncclient-token-\(UUID().uuidString)"
        let store = FileTokenStore(path: path)
        try store.save(ClientSession(token: "t", accountID: "a", familyID: "f"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try store.load()?.token == "t")
        try store.clear()
        #expect(try store.load() == nil)
    }
}
