import Foundation
import GRDB
import Logging
import PostgresNIO
import SyncAPI
import SyncPostgres
@_spi(StoreTesting) import SyncStorage
import Synchronization
import TestSupport
import Testing

/// Exactness and safety on a live database (issue 8): the purge horizon in paginated sync, purges racing writers,
/// and migrating a database that already holds data.
@Suite("Hardening: purge and migration", .sharingTheMachine)
struct HardeningStoreTests {
    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }

    @Test("a paginated date older than the purge horizon answers sync: false with a fresh first page", arguments: Backend.allCases)
    func purgeHorizonInPages(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            for id in ["t1", "t2", "t3"] {
                _ = try await engine.put(
                    session, ItemAddress(Collections.threads, id: id), body: .object([("title", .string(id))]), preconditions: .init())
            }
            let first = try Self.json(try await engine.pagedSync(session, Collections.threads, PageParameters(nb: 10), ifNoneMatch: nil).wholeBody())
            let date = try #require(first["date"]?.stringValue)
            try await engine.delete(session, ItemAddress(Collections.threads, id: "t2"), preconditions: .init())
            // Before the purge the tombstone answers exactly.
            let exact = try Self.json(
                try await engine.pagedSync(session, Collections.threads, PageParameters(date: date, lastId: "t1", nb: 10), ifNoneMatch: nil)
                    .wholeBody())
            #expect(exact["sync"] == .bool(true))
            #expect(exact["deleted"] == .array([.string("t2")]))
            #expect(try await store.purgeTombstones(cutoffMs: WallClock.nowMs() + 1000) == 1)
            for lastId in [nil, "t1"] as [String?] {
                let answer = try Self.json(
                    try await engine.pagedSync(
                        session, Collections.threads, PageParameters(date: date, lastId: lastId, nb: 10), ifNoneMatch: nil
                    ).body)
                #expect(answer["sync"] == .bool(false), "a purged deletion can no longer be told: the list is sent afresh")
                #expect(PaginatedSyncTests.ids(answer["updated"]).sorted() == ["t1", "t3"])
                #expect(answer["nomore"] == .bool(true))
            }
        }
    }

    @Test("purges run while writers write: no error, no live item lost, every tombstone older than the cutoff gone", arguments: Backend.allCases)
    func purgeDuringWrites(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let sessions = [try await ConcurrencyTests.newFamily(store), try await ConcurrencyTests.newFamily(store)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (w, session) in sessions.enumerated() {
                    group.addTask {
                        for n in 0..<150 {
                            let address = ItemAddress(Collections.contacts, id: "c\(n % 40)")
                            if n % 3 == 2 {
                                try await engine.delete(session, address, preconditions: .init())
                            } else {
                                _ = try await engine.put(
                                    session, address, body: .object([("firstName", .string("w\(w) n\(n)"))]), preconditions: .init())
                            }
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<30 {
                        _ = try await store.purgeTombstones(cutoffMs: WallClock.nowMs() + 60_000)
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
                try await group.waitForAll()
            }
            _ = try await store.purgeTombstones(cutoffMs: WallClock.nowMs() + 60_000)
            for session in sessions {
                // The live items are exactly those whose last operation was a PUT.
                let live = try await ConcurrencyTests.serverItems(engine, session)
                let expected = Set(
                    (0..<150).filter { n in n % 3 != 2 && !(0..<150).contains { m in m > n && m % 40 == n % 40 } }.map { "c\($0 % 40)" })
                #expect(Set(live.keys) == expected)
                let delta = try await store.delta(spaceID: session.spaceID, collections: [Collections.contacts.name], since: 0)
                #expect(delta.rows[Collections.contacts.name, default: []].allSatisfy { !$0.deleted }, "tombstones were purged")
            }
        }
    }

    /// What the family holds, as a write's plan sees it under the family's lock (quota counters).
    static func usage(_ store: any SyncStore, _ spaceID: String) async throws -> FamilyUsage {
        let seen = Mutex(FamilyUsage())
        _ = try await store.write(spaceID: spaceID, key: ItemKey(collection: "contacts", id: "probe"), parent: nil, nowMs: 0) { context in
            seen.withLock { $0 = context.usage }
            return .unchanged
        }
        return seen.withLock { $0 }
    }

    /// Takes the quota migration back: its triggers, its columns and its record.
    static func undoQuotaMigration(_ url: DatabaseURL, _ opened: OpenedStore) async throws {
        switch url {
        case .sqlite(let path):
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        DROP TRIGGER items_usage_insert; DROP TRIGGER items_usage_update; DROP TRIGGER items_usage_delete;
                        ALTER TABLE families DROP COLUMN live_items; ALTER TABLE families DROP COLUMN stored_bytes;
                        DELETE FROM grdb_migrations WHERE identifier = '005_quotas.sql';
                        """)
            }
            try queue.close()
        case .postgres:
            let client = try #require(opened.postgresClient)
            for statement: PostgresQuery in [
                "DROP TRIGGER items_usage ON items", "DROP FUNCTION syncapi_items_usage()",
                "ALTER TABLE families DROP COLUMN live_items, DROP COLUMN stored_bytes",
                "DELETE FROM syncapi_migrations WHERE name = '006_quotas.sql'",
            ] {
                try await client.query(statement)
            }
        }
    }

    @Test("migrating a database that already holds data keeps every item and date of sync", arguments: Backend.allCases)
    func migrateWithData(backend: Backend) async throws {
        let url = try await backend.freshDatabaseURL()
        let opened = try OpenedStore.open(url, deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            let store = opened.store
            // A family and its data under the schema as the previous release left it: the quota migration (the
            // last) taken back by hand, so that it fills the counters from rows already there.
            try await store.migrate()
            // No full lists kept: the "before" list is read under the previous release's schema, whose counter read
            // (with the quota columns) this release's engine does not run.
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry, fullLists: FullListCache(capacity: 0))
            /// A family with four contacts and a tombstone.
            func fill() async throws -> Session {
                let session = try await ConcurrencyTests.newFamily(store)
                for n in 0..<5 {
                    _ = try await engine.put(
                        session, ItemAddress(Collections.contacts, id: "c\(n)"), body: .object([("firstName", .string("n\(n)"))]),
                        preconditions: .init())
                }
                try await engine.delete(session, ItemAddress(Collections.contacts, id: "c4"), preconditions: .init())
                return session
            }
            let session = try await fill()
            try await Self.undoQuotaMigration(url, opened)
            let before = try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil)
            try await store.migrate()
            try await store.migrate()
            let after = try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil)
            #expect(try await after.wholeBody() == before.wholeBody(), "same items, same date of sync")
            let delta = try Self.json(try await engine.fullListSync(session, Collections.contacts, date: before.date, ifNoneMatch: nil).wholeBody())
            #expect(delta["sync"] == .bool(true))
            // The quota counters were filled from the rows already there: the same as a family written after the
            // migration, whose counters the triggers kept.
            let migrated = try await Self.usage(store, session.spaceID)
            let written = try await Self.usage(store, try await fill().spaceID)
            #expect(migrated == written && migrated.items == 7, "\(migrated) \(written)")
            // The new tables work on the migrated database.
            let counted = try await store.countLoginAttempt(keys: ["u:x"], nowMs: 1, windowMs: 10)
            #expect(counted["u:x"]?.attempts == 1)
        }
    }

    @Test("one purge at a time: while another instance holds the purge lock, a purge deletes nothing; then it does")
    func purgeOneAtATime() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL()
        let opened = try OpenedStore.open(try DatabaseURL(parsing: url), deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        let port = Int(url.split(separator: ":").last!.split(separator: "/").first!)!
        let otherInstance = PostgresClient(
            configuration: .init(
                host: "127.0.0.1", port: port, username: "postgres", password: nil, database: String(url.split(separator: "/").last!),
                tls: .disable),
            backgroundLogger: Logger(label: "other"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            group.addTask { await otherInstance.run() }
            defer { group.cancelAll() }
            let store = opened.store
            try await store.migrate()
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            let address = ItemAddress(Collections.contacts, id: "gone")
            _ = try await engine.put(session, address, body: .object([("firstName", .string("x"))]), preconditions: .init())
            try await engine.delete(session, address, preconditions: .init())
            let cutoff = WallClock.nowMs() + 60_000
            try await otherInstance.withConnection { conn in
                // The key of the purge's lock (PostgresStore.purgeLockKey), held as another instance's purge would.
                try await conn.query("SELECT pg_advisory_lock(7311563)", logger: Logger(label: "other"))
                #expect(try await store.purgeTombstones(cutoffMs: cutoff) == 0, "skipped: the other purge covers it")
                try await conn.query("SELECT pg_advisory_unlock(7311563)", logger: Logger(label: "other"))
            }
            #expect(try await store.purgeTombstones(cutoffMs: cutoff) == 1)
        }
    }

}
