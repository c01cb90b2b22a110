import Foundation
import GRDB
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncSQLite

/// What makes an acknowledged SQLite write survive power loss (issue 8, item 9): every connection of the pool, the
/// writer and the readers, runs in WAL mode with `synchronous = FULL`, so a commit is on disk before it is answered.
@Suite("SQLite durability settings", .sharingTheMachine)
struct SQLiteDurabilityTests {
    @Test("every connection is WAL with synchronous = FULL; readiness reads the file")
    func fullSync() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("syncapi-durability-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try SQLiteStore(path: "\(folder)/db.sqlite")
        try await store.migrate()
        let written = try await store.write { db in
            [try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous").map(String.init)]
        }
        #expect(written == ["wal", "2"])  // 2 is FULL
        let read = try await store.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(read == 2)
        try await store.ping()
    }
}
