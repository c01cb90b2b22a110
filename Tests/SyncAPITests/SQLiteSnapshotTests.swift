import Foundation
import GRDB
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncSQLite

/// SQLite's snapshots (a group's run of reads, a streamed full list) on connections kept open between snapshots
/// (`SnapshotReaders`): each reads one state of the database from its first read to its last, a kept connection
/// never holds a transaction, and no more than `keep` wait idle.
@Suite("SQLite snapshots on kept connections", .sharingTheMachine)
struct SQLiteSnapshotTests {
    static func store() async throws -> (SQLiteStore, SyncEngine, Session) {
        guard case .sqlite(let path) = try await Backend.sqlite.freshDatabaseURL() else { throw SyncError.unavailable }
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        return (store, SyncEngine(store: store, producers: .testing, collections: Collections.registry), try await ConcurrencyTests.newFamily(store))
    }

    static func put(_ engine: SyncEngine, _ session: Session, _ id: String) async throws {
        _ = try await engine.put(
            session, ItemAddress(Collections.contacts, id: id), body: .object([("firstName", .string(id))]), preconditions: .init())
    }

    static func version(_ store: any ItemReads, _ session: Session) async throws -> Int64 {
        try await store.delta(spaceID: session.spaceID, collections: [Collections.contacts.name], since: nil).version
    }

    @Test("30 snapshots in a row, a write landing inside each: one state per snapshot, one connection for all")
    func oneStateEach() async throws {
        let (store, engine, session) = try await Self.store()
        for round in 0..<30 {
            let before = try await Self.version(store, session)
            let (first, last, items) = try await store.withReadSnapshot { pinned in
                let first = try await Self.version(pinned, session)
                try await Self.put(engine, session, "c\(round)")
                let page = try await pinned.pageSync(
                    spaceID: session.spaceID,
                    query: PageQuery(collection: Collections.contacts.name, anchorID: nil, limit: 100, tags: nil, children: nil), since: nil)
                return (first, try await Self.version(pinned, session), page.top.count)
            }
            #expect(first == before && last == before && items == round, "round \(round)")
            #expect(try await Self.version(store, session) > before)
            #expect(store.snapshots.idle == 1)
        }
        // Given back out of its transaction: a checkpoint can take the whole WAL back (none busy).
        let checkpoint = try await store.pool.writeWithoutTransaction { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)").map { ($0[0] as Int, $0[1] as Int) }
        }
        #expect(checkpoint?.0 == 0 && checkpoint?.1 == 0, "\(String(describing: checkpoint))")
    }

    @Test("a snapshot whose body throws, and 12 at once (more than are kept): connections back, clean, at most keep")
    func throwsAndCrowds() async throws {
        let (store, engine, session) = try await Self.store()
        await #expect(throws: SyncError.self) {
            try await store.withReadSnapshot { pinned in
                _ = try await Self.version(pinned, session)
                throw SyncError.notFound()
            }
        }
        try await Self.put(engine, session, "after")
        #expect(try await store.withReadSnapshot { try await Self.version($0, session) } == Self.version(store, session))
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<12 {
                group.addTask {
                    try await store.withReadSnapshot { pinned in
                        let first = try await Self.version(pinned, session)
                        try await Self.put(engine, session, "crowd\(n)")
                        try await Task.sleep(for: .milliseconds(20))
                        return try await Self.version(pinned, session) == first
                    }
                }
            }
            for try await same in group { #expect(same) }
        }
        #expect(store.snapshots.idle <= store.snapshots.keep && store.snapshots.idle >= 1)
        let checkpoint = try await store.pool.writeWithoutTransaction { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)").map { $0[0] as Int }
        }
        #expect(checkpoint == 0)
    }
}
