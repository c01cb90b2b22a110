import Logging
import PostgresNIO
import Synchronization
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// A read-only snapshot's `START TRANSACTION` and `COMMIT` are written without waiting for their answers
/// (`PostgresStore.snapshot`): the body's first statement must still be inside the transaction, and whoever leases
/// the connection next must find it out of it.
@Suite("PostgreSQL snapshots without round trips of their own", .sharingTheMachine)
struct PostgresSnapshotTests {
    @Test(
        "many snapshots at once: each body's first statement is inside its transaction, and two reads see one snapshot across a commit between them")
    func firstStatementInside() async throws {
        try await Backend.postgres.withStore { opened in
            let store = try #require(opened as? PostgresStore)
            let family = try await ConcurrencyTests.newFamily(store).spaceID
            let key = ItemKey(collection: "contacts", id: "c")
            // Three snapshots at a time, each with a write that needs a connection of its own from the same pool.
            for wave in 0..<16 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for n in (wave * 3)..<(wave * 3 + 3) {
                        group.addTask {
                            let (isolation, before, after) = try await store.snapshot(on: store.client) { conn in
                                let isolation = try await Self.one(conn, "SHOW transaction_isolation", as: String.self)
                                let before = try await Self.version(conn, family)
                                // A write commits on another connection between the two reads.
                                _ = try await store.write(spaceID: family, key: key, parent: nil, nowMs: Int64(n)) { _ in
                                    .write([RowWrite(key: key, body: #"{"n":\#(n)}"#)])
                                }
                                return (isolation, before, try await Self.version(conn, family))
                            }
                            #expect(isolation == "repeatable read")
                            #expect(before == after, "the second read saw a commit made after the first: two snapshots")
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test("on a pool of one connection, the next lease after a snapshot is out of its transaction and its writes commit")
    func nextLeaseOutside() async throws {
        try await DeltaBatcherTests.withOneConnection { store, _ in
            let family = try await ConcurrencyTests.newFamily(store).spaceID
            let key = ItemKey(collection: "contacts", id: "c")
            for n in 1...30 {
                let read = try await store.snapshot(on: store.client) { conn in try await Self.version(conn, family) }
                let isolation = try await store.client.withConnection { conn in
                    try await Self.one(conn, "SHOW transaction_isolation", as: String.self)
                }
                #expect(isolation == "read committed")
                _ = try await store.write(spaceID: family, key: key, parent: nil, nowMs: Int64(n)) { _ in
                    .write([RowWrite(key: key, body: #"{"n":\#(n)}"#)])
                }
                // A snapshot that begins after the write sees it: nothing was left inside an open transaction.
                let next = try await store.snapshot(on: store.client) { conn in try await Self.version(conn, family) }
                #expect(next == read + 1)
            }
        }
    }

    @Test("a body that throws rolls back; the connection serves the next snapshot")
    func throwingBody() async throws {
        try await DeltaBatcherTests.withOneConnection { store, _ in
            struct Planned: Error {}
            for _ in 0..<5 {
                await #expect(throws: Planned.self) {
                    try await store.snapshot(on: store.client) { conn in
                        _ = try await Self.one(conn, "SELECT 1", as: Int32.self)
                        throw Planned()
                    }
                }
                // A failed statement aborts the transaction; the rollback still leaves the connection clean.
                await #expect(throws: PSQLError.self) {
                    try await store.snapshot(on: store.client) { conn in
                        _ = try await Self.one(conn, "SELECT 1 / 0", as: Int32.self)
                    }
                }
                let isolation = try await store.snapshot(on: store.client) { conn in
                    try await Self.one(conn, "SHOW transaction_isolation", as: String.self)
                }
                #expect(isolation == "repeatable read")
            }
        }
    }

    static func one<T: PostgresDecodable & Sendable>(_ conn: PostgresConnection, _ sql: String, as: T.Type) async throws -> T {
        for try await value in try await conn.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test")).decode(T.self) {
            return value
        }
        throw PostgresSnapshotTestsError.noRow
    }

    static func version(_ conn: PostgresConnection, _ family: String) async throws -> Int64 {
        for try await value in try await conn.query("SELECT version FROM families WHERE id = \(family)", logger: Logger(label: "test"))
            .decode(Int64.self)
        {
            return value
        }
        throw PostgresSnapshotTestsError.noRow
    }
}

enum PostgresSnapshotTestsError: Error { case noRow }
