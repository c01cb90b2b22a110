import Foundation
import Logging
import PostgresNIO
import SyncAPI
@_spi(StoreTesting) import SyncStorage
import Synchronization
import TestSupport
import Testing

/// Exactness under concurrency on a real PostgreSQL: whatever writers do meanwhile, a client that applies every
/// sync answer ends up with exactly the server's live items, and no change is ever lost between two dates.
@Suite("Concurrent writers and syncing clients (PostgreSQL)", .sharingTheMachine)
struct ConcurrencyTests {
    /// A client's local copy of one full list.
    struct Replica {
        var items: [String: String] = [:]
        var date: String?

        /// Applies an answer as protocol §3 says: clear on `sync: false`, deletes, then upserts, then the date.
        mutating func apply(_ answer: SyncAnswer) async throws {
            let json = try JSONParser.parse(try await answer.wholeBody())
            guard case .array(let updated)? = json["updated"], case .array(let deleted)? = json["deleted"] else {
                throw SyncError.invalidJSON("bad answer")
            }
            if json["sync"] == .bool(false) { items = [:] }
            let updatedIDs = updated.compactMap { $0["id"]?.stringValue }
            let deletedIDs = deleted.compactMap(\.stringValue)
            #expect(Set(updatedIDs).isDisjoint(with: deletedIDs), "an id in both lists")
            #expect(Set(updatedIDs).count == updatedIDs.count, "an id twice in updated")
            for id in deletedIDs { items[id] = nil }
            for item in updated { items[item["id"]!.stringValue!] = JSONWriter.encode(item) }
            date = json["date"]?.stringValue
        }
    }

    static func newFamily(_ store: any SyncStore) async throws -> Session {
        let family = DatabaseIdentity.uuid()
        let account = NewAccount(
            id: DatabaseIdentity.uuid(), username: "u\(family.prefix(8))", displayName: "u", passwordHash: "x", profileBody: "{}", settingsBody: "{}",
            settingsCollection: Collections.registry.accountSingleton?.name)
        try await store.createFamily(id: family, name: "Family", familyBody: "{}", account: account, nowMs: 0)
        return Session(accountID: account.id, spaceID: family, role: .owner)
    }

    static func serverItems(_ engine: SyncEngine, _ session: Session) async throws -> [String: String] {
        var fresh = Replica()
        try await fresh.apply(try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil))
        return fresh.items
    }

    /// Set once the writers are done.
    final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    @Test("8 writers and a syncing client, 12 rounds: the replica always ends equal to the server")
    func writersAndSyncer() async throws {
        try await Backend.postgres.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            var totalSyncs = 0
            for round in 0..<12 {
                let session = try await Self.newFamily(store)
                let ids = (0..<25).map { "c\($0)" }
                let done = Flag()
                async let syncs: Int = {
                    var replica = Replica()
                    var count = 0
                    while !done.raised.load(ordering: .acquiring) {
                        try await replica.apply(try await engine.fullListSync(session, Collections.contacts, date: replica.date, ifNoneMatch: nil))
                        count += 1
                    }
                    // One more sync after the last write: the replica must now equal the server.
                    try await replica.apply(try await engine.fullListSync(session, Collections.contacts, date: replica.date, ifNoneMatch: nil))
                    #expect(replica.items == (try await Self.serverItems(engine, session)), "round \(round)")
                    return count
                }()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            var generator = SystemRandomNumberGenerator()
                            for n in 0..<40 {
                                let id = ids.randomElement(using: &generator)!
                                if Int.random(in: 0..<4, using: &generator) == 0 {
                                    try await engine.delete(session, ItemAddress(Collections.contacts, id: id), preconditions: .init())
                                } else {
                                    let body = JSONValue.object([("firstName", .string("w\(writer)-\(n)-r\(round)"))])
                                    _ = try await engine.put(session, ItemAddress(Collections.contacts, id: id), body: body, preconditions: .init())
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                done.raised.store(true, ordering: .releasing)
                totalSyncs += try await syncs
            }
            // The syncer really ran concurrently with the writers.
            #expect(totalSyncs > 12)
        }
    }

    @Test("a write held open during a sync is delivered by the next sync")
    func heldOpenWrite() async throws {
        let url = try DatabaseURL(parsing: try await TestPostgres.shared.newDatabaseURL())
        let opened = try OpenedStore.open(url, deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        let client = try #require(opened.postgresClient)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            let store = opened.store
            try await store.migrate()
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await Self.newFamily(store)
            _ = try await engine.put(
                session, ItemAddress(Collections.contacts, id: "before"), body: .object([("firstName", .string("A"))]), preconditions: .init())
            var replica = Replica()
            try await replica.apply(try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil))
            let logger = Logger(label: "test")
            // Another instance's writer: takes the next version under the family lock, writes, and does not commit yet.
            try await client.withConnection { writer in
                try await writer.query("BEGIN", logger: logger)
                try await writer.query(
                    """
                    WITH v AS (UPDATE families SET version = version + 1 WHERE id = \(session.spaceID) RETURNING version)
                    INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms)
                    SELECT \(session.spaceID), 'contacts', '', 'held', v.version, false, '{"id":"held"}', 0 FROM v
                    """, logger: logger)
                // A sync meanwhile neither waits for it nor sees it, and its date stays below the held version.
                let during = try await engine.fullListSync(session, Collections.contacts, date: replica.date, ifNoneMatch: nil)
                try await replica.apply(during)
                #expect(replica.items["held"] == nil)
                try await writer.query("COMMIT", logger: logger)
            }
            let after = try await engine.fullListSync(session, Collections.contacts, date: replica.date, ifNoneMatch: nil)
            try await replica.apply(after)
            #expect(replica.items["held"] == #"{"id":"held"}"#)
            #expect(replica.items == (try await Self.serverItems(engine, session)))
        }
    }
}
