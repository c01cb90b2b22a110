import Foundation
import GRDB
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncSQLite

/// Reads in place on SQLite (`InlineReaders`): they see every committed write, and when every inline connection is
/// taken a read goes through the pool instead of waiting (no thread of the concurrency pool ever waits for a reader).
@Suite("SQLite inline readers", .sharingTheMachine)
struct InlineReadersTests {
    @Test("a read in place sees the last commit; with every inline connection held, reads still answer through the pool")
    func fallsBackWithoutWaiting() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("syncapi-inline-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try SQLiteStore(path: "\(folder)/db.sqlite")
        try await store.migrate()
        for round in 0..<20 {
            try await store.write { db in
                try db.execute(
                    sql: "INSERT INTO syncapi_meta (key, value) VALUES ('probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    arguments: ["\(round)"])
            }
            let read = try await store.read { db in try String.fetchOne(db, sql: "SELECT value FROM syncapi_meta WHERE key = 'probe'") }
            #expect(read == "\(round)")
        }
        // Hold every inline connection on threads of their own, inside a read each.
        let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            Thread.detachNewThread {
                _ = store.inline.tryRead { _ in
                    held.signal()
                    release.wait()
                }
            }
        }
        for _ in 0..<count { held.wait() }
        #expect(store.inline.tryRead { _ in 1 } == nil, "every inline connection is taken")
        let start = ContinuousClock.now
        let read = try await store.read { db in try String.fetchOne(db, sql: "SELECT value FROM syncapi_meta WHERE key = 'probe'") }
        #expect(read == "19")
        #expect(ContinuousClock.now - start < .seconds(5))
        for _ in 0..<count { release.signal() }
        // Given back: reads in place again.
        let deadline = ContinuousClock.now + .seconds(5)
        while store.inline.tryRead({ _ in 1 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.inline.tryRead { _ in 1 } != nil)
    }
}
