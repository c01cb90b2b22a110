import Foundation
import GRDB
import Testing

@testable import SyncClient

/// The held counts the status reads (`heldCounts`, kept by triggers) against a count of the rows, through every way
/// a row gains or loses its server version: answers with and without `sync`, crops, deletions, local edits, pushes
/// that land or are refused, and an erase.
@Suite("Held counts")
struct HeldCountTests {
    /// The count the status used to make: every server row of the list.
    static func exact(_ db: Database, _ collection: SyncCollection) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM items WHERE collection = ? AND parent = '' AND server IS NOT NULL",
            arguments: [collection.rawValue]) ?? 0
    }

    /// A kept count is always the exact one; a dropped one is counted.
    static func check(_ replica: Replica, _ step: String) throws {
        try replica.pool.read { db in
            for collection in [SyncCollection.contacts, .threads] {
                let exact = try exact(db, collection)
                let kept = try Int.fetchOne(db, sql: "SELECT n FROM heldCounts WHERE collection = ?", arguments: [collection.rawValue])
                #expect(kept == nil || kept == exact, "\(collection) after \(step): kept \(kept ?? -1), exact \(exact)")
                #expect(try Replica.serverCount(db, collection) == exact, "\(collection) after \(step)")
            }
        }
    }

    @Test("the kept count equals the rows' count after every change, in 600 random steps")
    func randomChanges() throws {
        let replica = try Golden.replica()
        var random = SplitMix(seed: 20_261_128)
        func ids(_ prefix: String, _ most: Int) -> [String] {
            (0..<Int(random.next() % UInt64(most + 1))).map { _ in "\(prefix)\(random.next() % 12)" }
        }
        func contact(_ id: String) -> JSONObject { ["id": .string(id), "firstName": .string("F\(random.next() % 3)")] }
        func thread(_ id: String) -> JSONObject {
            [
                "id": .string(id), "title": "T", "lastMessageAt": .string("2026-01-0\(1 + random.next() % 9)T00:00:00.000Z"),
                "messages": [["id": .string("m\(random.next() % 4)"), "text": "x", "created": "2026-01-01T00:00:00.000Z"]],
            ]
        }
        for step in 0..<600 {
            let choice = random.next() % 11
            let label = "step \(step) (\(choice))"
            try replica.pool.write { db in
                switch choice {
                case 0, 1:
                    let answer = SyncAnswer(date: "d", sync: choice == 1, updated: ids("c", 6).map(contact), deleted: ids("c", 3))
                    try Replica.apply(db, .contacts, answer)
                case 2:
                    let answer = PagedSyncAnswer(
                        date: "d", sync: random.next() % 3 != 0, updated: ids("t", 4).map(thread), deleted: ids("t", 2),
                        crop: random.next() % 4 == 0, nomore: random.next() % 2 == 0)
                    try Replica.apply(db, .threads, answer)
                case 3:
                    try Replica.apply(db, .threads, parent: nil, PageAnswer(items: ids("t", 3).map(thread), nomore: false))
                case 4:
                    for id in ids("c", 2) { try Replica.save(db, .contacts, id: id, parent: "", contact(id)) }
                case 5:
                    for id in ids("c", 2) { try Replica.delete(db, .contacts, id: id, parent: "") }
                case 6, 7:
                    // The oldest unsent write lands (with the server's version, or gone) or is refused.
                    guard let op = try Replica.takeForPush(db).first else { return }
                    let layout: ServerModel.Collection = op.collection == .threads ? .threads : .contacts
                    if choice == 7 {
                        try Replica.refused(db, op, status: 422, code: "invalid", detail: "no")
                    } else {
                        try Replica.landed(db, op, layout, server: op.kind == .delete ? nil : contact(op.id), etag: "e")
                    }
                case 8:
                    for id in ids("c", 2) { try Replica.removeServer(db, .contacts, id: id) }
                case 9:
                    if random.next() % 8 == 0 { try Replica.eraseData(db) }
                default:
                    // The end of a sync's transaction: what a clear dropped is counted again.
                    try Replica.recountHeld(db, [.contacts, .threads])
                }
            }
            try Self.check(replica, label)
        }
        // Once every list was replaced at least once and recounted, each count is kept, not counted.
        try replica.pool.write { db in try Replica.recountHeld(db, [.contacts, .threads]) }
        let kept = try replica.pool.read { db in try Int.fetchAll(db, sql: "SELECT n FROM heldCounts ORDER BY collection") }
        #expect(kept.count == 2)
    }

    @Test("a replica made before the counts gets them, exact, when it opens")
    func migrated() throws {
        let path = Scratch.path("syncclient-held-")
        // A replica at migration 007 with rows of every kind, then opened by this SDK.
        do {
            let queue = try DatabaseQueue(path: path)
            var migrator = Replica.migrator
            migrator.eraseDatabaseOnSchemaChange = false
            try migrator.migrate(queue, upTo: "007-conflict-journal")
            try queue.write { db in
                // Three server items (one deleted here, still held), one created here, one child, another list.
                try db.execute(
                    sql: """
                        INSERT INTO items (collection, parent, id, server, local, localDeleted) VALUES
                            ('contacts', '', 'a', '{}', NULL, 0), ('contacts', '', 'b', '{}', NULL, 1),
                            ('contacts', '', 'c', '{}', '{}', 0), ('contacts', '', 'new', NULL, '{}', 0),
                            ('messages', 't', 'm', '{}', NULL, 0), ('places', '', 'p', '{}', NULL, 0)
                        """)
            }
        }
        let replica = try Replica(path: path)
        let kept = try replica.pool.read { db in try Int.fetchOne(db, sql: "SELECT n FROM heldCounts WHERE collection = 'contacts'") }
        #expect(kept == 3)
        try Self.check(replica, "the migration")
    }
}

/// A small seeded generator (SplitMix64): the same steps on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
