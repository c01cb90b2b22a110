import Foundation
import GRDB
import Testing

@testable import SyncClient

/// The replica-apply layer fed with the server's exact answers from the golden scenarios: `sync: false` replaces,
/// `crop` keeps the fresh page, `nomore` is stored, children are replaced inside their parent, `deleted` is applied,
/// and unsent local edits stay on top.
@Suite("Applying golden answers to a replica")
struct ApplyGoldenTests {
    @Test("contacts: a full list, then deltas with deletions")
    func contacts() throws {
        let replica = try Golden.replica()
        let file = "contacts-sync.json"
        try replica.pool.write { db in try Replica.apply(db, .contacts, try Golden.answer(file, 2, as: SyncAnswer.self)) }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "c2"])
        try replica.pool.write { db in try Replica.apply(db, .contacts, try Golden.answer(file, 6, as: SyncAnswer.self)) }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "c3"])
        // Applying the same answer twice gives the same state (protocol §3).
        try replica.pool.write { db in try Replica.apply(db, .contacts, try Golden.answer(file, 6, as: SyncAnswer.self)) }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "c3"])
        // A full answer (`sync: false`) replaces what was held.
        try replica.pool.write { db in
            try Replica.storeServer(db, .contacts, ["id": "stale", "firstName": "Gone", "modified": "m"])
            try Replica.apply(db, .contacts, try Golden.answer(file, 2, as: SyncAnswer.self))
        }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "c2"])
    }

    @Test("threads, seed examples 2 and 3: crop keeps the fresh page, a page appends below, nomore is stored")
    func cropAndMore() throws {
        let replica = try Golden.replica()
        let file = "threads-seed-examples-2-3.json"
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 2, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .threads) == ["bob", "alice"])
        #expect(try replica.pool.read { db in try Replica.flag(db, MetaKey.nomore(.threads)) })

        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 15, as: PagedSyncAnswer.self)) }
        let top = (3...12).reversed().map { String(format: "joe%02d", $0) }
        #expect(try Golden.ids(replica, .threads) == top, "crop: only the fresh page is held")
        #expect(try !replica.pool.read { db in try Replica.flag(db, MetaKey.nomore(.threads)) })
        #expect(try replica.pool.read { db in try Replica.lastServerID(db, .threads) } == "joe03")

        try replica.pool.write { db in try Replica.apply(db, .threads, parent: nil, try Golden.answer(file, 16, as: PageAnswer.self)) }
        #expect(try Golden.ids(replica, .threads) == top + ["joe02", "joe01", "bob", "alice"], "no hole after get more")
        #expect(try replica.pool.read { db in try Replica.flag(db, MetaKey.nomore(.threads)) })

        // A later delta whose nomore is false (it describes below lastId C = joe03 only) updates the flag as sent.
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 20, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .threads).count == 14)
    }

    @Test("threads and messages: children replaced inside their parent, with their nomore; a deleted thread takes them")
    func children() throws {
        let replica = try Golden.replica()
        let file = "threads-messages.json"
        func nomore(_ parent: String) throws -> Bool {
            try replica.pool.read { db in try Replica.flag(db, MetaKey.nomore(.messages, parent: parent)) }
        }
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 3, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .messages, parent: "t1") == ["m2"])
        #expect(try !nomore("t1"))
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 6, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .messages, parent: "t1") == ["m2", "m1"])
        #expect(try nomore("t1"))
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 10, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .messages, parent: "t1") == ["m3", "m1"], "m2 was deleted: the thread carries the new set")
        // Children pages.
        let other = try Golden.replica()
        try other.pool.write { db in
            try Replica.apply(db, .messages, parent: "t1", try Golden.answer(file, 11, as: PageAnswer.self))
        }
        #expect(try other.pool.read { db in try Replica.lastServerID(db, .messages, parent: "t1") } == "m3")
        try other.pool.write { db in
            try Replica.apply(db, .messages, parent: "t1", try Golden.answer(file, 12, as: PageAnswer.self))
        }
        #expect(try Golden.ids(other, .messages, parent: "t1") == ["m3", "m1"])
        #expect(try other.pool.read { db in try Replica.flag(db, MetaKey.nomore(.messages, parent: "t1")) })
        // The thread is deleted: its messages go with it.
        try replica.pool.write { db in try Replica.apply(db, .threads, try Golden.answer(file, 20, as: PagedSyncAnswer.self)) }
        #expect(try Golden.ids(replica, .threads) == ["t2"])
        #expect(try Golden.ids(replica, .messages, parent: "t1").isEmpty)
        #expect(try !nomore("t1"))
    }

    @Test("familysync: null family and settings mean unchanged; members are deltas; sync false replaces")
    func family() throws {
        let replica = try Golden.replica()
        let file = "familysync.json"
        try replica.pool.write { db in _ = try Replica.applyBundle(db, ServerModel.familyBundle, try Golden.answer(file, 0, as: JSONObject.self)) }
        #expect(try Golden.ids(replica, .family).count == 1)
        #expect(try Golden.ids(replica, .settings).count == 1)
        try replica.pool.write { db in _ = try Replica.applyBundle(db, ServerModel.familyBundle, try Golden.answer(file, 7, as: JSONObject.self)) }
        #expect(try Golden.ids(replica, .members) == ["m1", "m2", "m3"])
        try replica.pool.write { db in _ = try Replica.applyBundle(db, ServerModel.familyBundle, try Golden.answer(file, 10, as: JSONObject.self)) }
        #expect(try Golden.ids(replica, .family).count == 1, "family null: unchanged")
        try replica.pool.write { db in _ = try Replica.applyBundle(db, ServerModel.familyBundle, try Golden.answer(file, 13, as: JSONObject.self)) }
        #expect(try Golden.ids(replica, .members) == ["m1", "m2"])
        #expect(try Golden.ids(replica, .settings).count == 1, "settings null: unchanged")
        let accounts = try Golden.ids(replica, .accounts)
        #expect(!accounts.isEmpty)
        try replica.pool.write { db in _ = try Replica.applyBundle(db, ServerModel.familyBundle, try Golden.answer(file, 22, as: JSONObject.self)) }
        #expect(try Golden.ids(replica, .members) == ["m1", "m2"])
        let members = try replica.pool.read { db in try Replica.visibleItems(db, .members) }
        #expect(try members.map { try JSONValue.object($0).decode(Member.self).role } == ["parent", "child"])
    }

    @Test("a pulled item with an unsent edit: the pull becomes the base, the edit stays on top")
    func pendingOnTop() throws {
        let replica = try Golden.replica()
        let file = "contacts-sync.json"
        try replica.pool.write { db in
            try Replica.apply(db, .contacts, try Golden.answer(file, 2, as: SyncAnswer.self))
            try Replica.save(db, .contacts, id: "c1", parent: "", ["firstName": "Mine"])
            try Replica.delete(db, .contacts, id: "c2", parent: "")
            try Replica.save(db, .contacts, id: "new", parent: "", ["firstName": "Offline"])
        }
        // The server changed c1, deleted c2 and created c3 meanwhile.
        try replica.pool.write { db in try Replica.apply(db, .contacts, try Golden.answer(file, 6, as: SyncAnswer.self)) }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "c3", "new"])
        let c1 = try replica.pool.read { db in try Replica.visibleItem(db, .contacts, id: "c1") }
        #expect(c1?["firstName"] == "Mine")
        let base = try replica.pool.read { db in try Replica.base(db, try Replica.pending(db)[0]) }
        #expect(base.server?["lastName"] == "Martin", "the pulled version is the conflict base")
        // A full replacement keeps the unsent edits too.
        try replica.pool.write { db in try Replica.apply(db, .contacts, try Golden.answer(file, 2, as: SyncAnswer.self)) }
        #expect(try Golden.ids(replica, .contacts) == ["c1", "new"], "c2 stays deleted locally: its delete is queued")
        #expect(try replica.pool.read { db in try Replica.pending(db).map(\.id) } == ["c1", "c2", "new"])
    }

    @Test("crop keeps a thread that has an unsent edit")
    func cropKeepsEdits() throws {
        let replica = try Golden.replica()
        let file = "threads-seed-examples-2-3.json"
        try replica.pool.write { db in
            try Replica.apply(db, .threads, try Golden.answer(file, 2, as: PagedSyncAnswer.self))
            try Replica.save(db, .threads, id: "bob", parent: "", ["title": "Renamed", "read": true])
            try Replica.apply(db, .threads, try Golden.answer(file, 15, as: PagedSyncAnswer.self))
        }
        #expect(try Golden.ids(replica, .threads).contains("bob"))
        #expect(try !Golden.ids(replica, .threads).contains("alice"))
        #expect(try replica.pool.read { db in try Replica.lastServerID(db, .threads) } == "joe03", "an edited item not from the page has no place")
    }

    @Test("the app-start group of group.json applies in one transaction with its date; a failed answer applies nothing")
    func appStartGroup() throws {
        let replica = try Golden.replica()
        let group = try Golden.answer("group.json", 1, as: GroupAnswer.self)
        var answers = Dictionary(uniqueKeysWithValues: group.responses.map { (ServerModel.exampleIDs[$0.id]!, $0) })
        // The example has no wall sync: the SDK's group adds one.
        let empty: JSONValue = ["date": "<date>", "sync": false, "updated": [], "deleted": [], "crop": false, "nomore": true]
        answers["wallsync"] = SubResponse(id: "wallsync", status: 200, body: empty)
        let endpoints = ServerModel.family.endpoints
        let applied = try replica.pool.write { db in try SyncClient.applySync(db, endpoints, answers) }
        #expect(applied.date == "<date>")
        #expect(applied.replaced == ["contacts", "events", "accounts", "family", "members", "settings", "threads", "places", "wall"])
        #expect(try Golden.ids(replica, .contacts) == ["c1"])
        #expect(try Golden.ids(replica, .accounts).count == 1)
        #expect(try replica.pool.read { db in try Replica.meta(db, MetaKey.date) } == "<date>")

        // One answer failed (here 503): nothing of the group is applied, the date stays.
        var failing = answers
        failing["evtsync"] = SubResponse(id: "evtsync", status: 503, headers: ["Retry-After": "2"], body: ["code": "unavailable"])
        failing["ctcsync"] = SubResponse(id: "ctcsync", status: 200, body: ["date": "<later>", "sync": true, "updated": [], "deleted": ["c1"]])
        #expect(throws: SyncClientError.unavailable(status: 503, code: "unavailable", retryAfter: 2)) {
            try replica.pool.write { db in _ = try SyncClient.applySync(db, endpoints, failing) }
        }
        #expect(try Golden.ids(replica, .contacts) == ["c1"])
        #expect(try replica.pool.read { db in try Replica.meta(db, MetaKey.date) } == "<date>")
    }

    @Test("wall: a post re-created outside the types filter is deleted for this client")
    func wallFilter() throws {
        let replica = try Golden.replica()
        let file = "wall-filter-recreated.json"
        try replica.pool.write { db in try Replica.apply(db, .wall, try Golden.answer(file, 2, as: PagedSyncAnswer.self)) }
        let before = try Golden.ids(replica, .wall)
        try replica.pool.write { db in try Replica.apply(db, .wall, try Golden.answer(file, 5, as: PagedSyncAnswer.self)) }
        let after = try Golden.ids(replica, .wall)
        #expect(before.contains("p2") && !after.contains("p2"))
    }
}
