import Foundation
import Logging
import PostgresNIO
import SyncAPI
@_spi(StoreTesting) import SyncStorage
import TestSupport
import Testing

@testable import SyncPostgres

/// A statement written on a connection whose channel has closed is never answered by PostgresNIO 1.33 (the write is
/// dropped): the stores' statements refuse at once instead (`ClosedConnections.swift`).
@Suite("Closed connections", .sharingTheMachine)
struct ClosedConnectionTests {
    @Test("on a connection the database closed, a statement, a transaction and a prepared statement fail at once")
    func refusedAtOnce() async throws {
        let url = try await Backend.postgres.freshDatabaseURL()
        let logger = Logger(label: "closed")
        let client = try OpenedStore.postgresClient(url, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group throws in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.withConnection { conn in
                let pid = try await client.withConnection { other in
                    // The session to end, ended from another one (as a failover or an operator would).
                    var pid: Int32 = 0
                    for try await value in try await conn.statement("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) { pid = value }
                    try await other.statement("SELECT pg_terminate_backend(\(pid))", logger: logger)
                    return pid
                }
                #expect(pid > 0)
                try await conn.closeFuture.get()
                // Each of these waited for good before: the statement was written into a closed channel. A minute's
                // bound (answered `SyncError.unavailable`) turns such a wait into a failure rather than a hung run.
                func bounded(_ work: @escaping @Sendable () async throws -> Void) async throws {
                    try await Deadline.run(within: .seconds(60), timers: testTimers) { _ in try await work() }
                }
                let item = PreparedStatements.Item(spaceID: "s", key: ItemKey(collection: "contacts", parentID: "", id: "c"))
                await #expect(throws: ConnectionClosed.self) { try await bounded { try await conn.statement("SELECT 1", logger: logger) } }
                await #expect(throws: ConnectionClosed.self) { try await bounded { try await conn.transaction(logger: logger) { _ in } } }
                for prepared in [true, false] {
                    await #expect(throws: ConnectionClosed.self) {
                        try await bounded { _ = try await conn.run(item, prepared: prepared, logger: logger) }
                    }
                }
            }
        }
    }
}
