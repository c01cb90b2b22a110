import Foundation
import GRDB
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncSQLite

/// On SQLite the writer's commit tells live streams of a change (`CommitNotices`), as the version bump's `pg_notify`
/// does on PostgreSQL: every path that raises a space's version notifies once it is committed, with that version, and a
/// transaction that rolls back notifies nothing.
@Suite("SQLite commit notices", .sharingTheMachine)
struct SQLiteCommitNoticesTests {
    /// A store with a hub in a folder of its own, and a space with one owner, alice.
    static func store() async throws -> (store: SQLiteStore, hub: ChangeHub, space: String, folder: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("syncapi-notices-\(UUID().uuidString)").path
        let hub = ChangeHub(timers: TimerWheel(resolution: .milliseconds(10)))
        let store = try SQLiteStore(path: "\(folder)/db.sqlite", hub: hub)
        try await store.migrate()
        let space = DatabaseIdentity.uuid()
        try await store.createFamily(id: space, name: "Smith", familyBody: "{}", account: StoreConformanceTests.account("alice"), nowMs: 1)
        return (store, hub, space, folder)
    }

    static func version(_ store: SQLiteStore, _ space: String) async throws -> Int64? {
        try await store.read { db in try Int64.fetchOne(db, sql: "SELECT version FROM families WHERE id = ?", arguments: [space]) }
    }

    @Test("a committed version raise notifies with the committed version; one rolled back notifies nothing")
    func commitAndRollback() async throws {
        let (store, hub, space, folder) = try await Self.store()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let seen = hub.subscribe(family: space)
        defer { hub.unsubscribe(family: space) }
        let before = try await Self.version(store, space)
        await #expect(throws: SyncError.self) {
            try await store.write { db in
                _ = try SQLiteItemStatements(db: db).bump(spaceID: space)
                throw SyncError.unavailable
            }
        }
        #expect(try await Self.version(store, space) == before)
        #expect(hub.generation(family: space) == seen)
        #expect(hub.latestVersion(family: space) == nil)

        let raised = try await store.write { db in
            let statements = SQLiteItemStatements(db: db)
            _ = try statements.bump(spaceID: space)
            return try statements.bump(spaceID: space)
        }
        // Two raises in one transaction: one notice, with the last.
        #expect(hub.generation(family: space) == seen &+ 1)
        #expect(hub.latestVersion(family: space) == raised)
    }

    @Test("deleting a member raises the space's version, and the streams learn that version")
    func memberDeleted() async throws {
        let (store, hub, space, folder) = try await Self.store()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bob = StoreConformanceTests.account("bob")
        try await store.createAccount(bob, spaceID: space, nowMs: 2)
        let seen = hub.subscribe(family: space)
        defer { hub.unsubscribe(family: space) }
        #expect(try await store.deleteAccount(accountID: bob.id, spaceID: space, itemCollections: [], privateLists: [], nowMs: 3))
        let version = try #require(try await Self.version(store, space))
        #expect(hub.generation(family: space) != seen)
        // The write path used to revoke tokens only here: streams woke but were not told the version that moved.
        #expect(hub.latestVersion(family: space) == version)
    }
}
