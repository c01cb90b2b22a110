import Foundation
import Logging
import PostgresNIO
import SyncAPI
@_spi(StoreTesting) import SyncStorage
import TestSupport
import Testing

/// A session of the statements' pool left inside a transaction by an instance that stopped sending (frozen, paused,
/// cut off, or whose close never reached the database) holds its space's lock, and every write of that space on every
/// instance waits for it: PostgreSQL ends such a session (`PoolSize.idleInTransactionTimeout`).
@Suite("Ghost transactions", .sharingTheMachine)
struct GhostTransactionTests {
    static let logger = Logger(label: "ghost")

    /// The setting a session of `client` runs with.
    static func timeout(_ client: PostgresClient) async throws -> String {
        try await client.withConnection { conn in
            for try await value in try await conn.query("SHOW idle_in_transaction_session_timeout", logger: logger).decode(String.self) {
                return value
            }
            return ""
        }
    }

    @Test("the statements' pool of an opened store sets idle_in_transaction_session_timeout; the snapshot answers' pool does not")
    func poolSetting() async throws {
        let url = try await Backend.postgres.freshDatabaseURL()
        let opened = try OpenedStore.open(url, deadline: testDeadline, timers: testTimers, logger: Self.logger)
        try await withThrowingTaskGroup(of: Void.self) { group throws in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            let statements = try #require(opened.postgresClient)
            let snapshots = try #require(opened.snapshotClient)
            #expect(try await Self.timeout(statements) == "30s")
            // Snapshot answers wait for their client's reads between pages: theirs is bounded by the snapshot budget.
            #expect(try await Self.timeout(snapshots) == "0")
        }
    }

    @Test("a transaction holding a space's row whose instance sends nothing more is ended by PostgreSQL, and the space's next write lands")
    func ghostEnded() async throws {
        let url = try await Backend.postgres.freshDatabaseURL()
        try await Backend.withStore(at: url) { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            // The stopped instance: a pool from the same constructor, with 1 s rather than 30 so the test is short.
            let frozen = try OpenedStore.postgresClient(url, idleInTransaction: .seconds(1), logger: Self.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await frozen.run() }
                defer { group.cancelAll() }
                try await frozen.withConnection { conn in
                    try await conn.query("BEGIN", logger: Self.logger)
                    try await conn.query("SELECT 1 FROM families WHERE id = \(session.spaceID) FOR UPDATE", logger: Self.logger)
                    // It sends nothing more. The write waits for the row until PostgreSQL ends that session (without the
                    // setting it would wait out the store's deadline and fail).
                    _ = try await engine.put(
                        session, ItemAddress(Collections.contacts, id: "after"), body: .object([("firstName", .string("After"))]),
                        preconditions: .init())
                    // PostgreSQL ended the frozen session: its connection closes.
                    try await conn.closeFuture.get()
                }
            }
            let read = try await engine.get(session, ItemAddress(Collections.contacts, id: "after"), ifNoneMatch: nil)
            #expect(read.body.contains("After"))
        }
    }
}
