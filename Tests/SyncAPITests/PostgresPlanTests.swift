import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// The delta statements are planned once per connection, and that one plan reads the index `items_delta` on all
/// four of its columns, for a small family and for one whose rows are most of the table, in a table where top-level
/// items are a small share of the rows (issue 19: planning each
/// delta again was three quarters of PostgreSQL's CPU per delta).
@Suite("PostgreSQL plans of the delta statements", .sharingTheMachine)
struct PostgresPlanTests {
    @Test("the deltas keep their generic plan from the sixth run; it reads items_delta by family, collection, parent and version")
    func genericPlansOnTheIndex() async throws {
        try await Backend.postgres.withStore { opened in
            let store = try #require(opened as? PostgresStore)
            let small = try await ConcurrencyTests.newFamily(store).spaceID
            let large = try await ConcurrencyTests.newFamily(store).spaceID
            // The large family holds 12,000 of the table's 12,300 top-level rows: by its statistics, a plan made for its
            // value would rather scan the table; the generic plan must not.
            try await store.transaction(under: Deadline.Budget()) { conn in
                // The rows are the test's own: the usage counters' trigger (one update of the family per row) is off.
                try await conn.query("SET LOCAL session_replication_role = replica", logger: store.logger)
                for (family, count) in [(small, 100), (large, 4_000)] {
                    try await conn.query(
                        """
                        INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms)
                        SELECT \(family), c, '', 'i' || g, g, g % 10 = 0, CASE WHEN g % 10 = 0 THEN NULL ELSE '{}' END, 0, g
                        FROM unnest(ARRAY['contacts', 'events', 'places']) AS c, generate_series(1, \(count)) AS g
                        """, logger: store.logger)
                    try await conn.query("UPDATE families SET version = \(Int64(count)) WHERE id = \(family)", logger: store.logger)
                }
                // Children are most rows, as messages are in a chat: 40,000 of 52,300, so that a parent of '' looks
                // as selective to a plan as a version bound (by the statistics, a fifth of the rows against a third).
                try await conn.query(
                    """
                    INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms)
                    SELECT \(large), 'messages', 't' || t, 'm' || g, 10000 + t * 1000 + g, false, '{}', 0, g
                    FROM generate_series(1, 100) AS t, generate_series(1, 400) AS g
                    """, logger: store.logger)
            }
            try await store.transaction(under: Deadline.Budget()) { conn in _ = try await conn.query("ANALYZE items", logger: store.logger) }

            try await store.withReadSnapshot { pinned in
                let pinned = try #require(pinned as? PostgresSnapshot).store
                try await pinned.read { conn in
                    // As a phone syncs: since a date a few changes back, where a plan made for the value expects
                    // few rows and looks cheaper than the generic one.
                    for run in 0..<8 {
                        let (family, top): (String, Int64) = run % 2 == 0 ? (small, 100) : (large, 4_000)
                        _ = try await pinned.readDelta(spaceID: family, collections: ["contacts"], since: top - 15)
                        _ = try await pinned.readDelta(spaceID: family, collections: ["contacts", "events"], since: top - 15)
                        let deltas = try #require(
                            try await PostgresStore.deltas(
                                of: [
                                    DeltaRequest(spaceID: family, collections: ["contacts"], since: top - 5),
                                    DeltaRequest(spaceID: family, collections: ["events"], since: nil),
                                ], spaceID: family, limit: 20_000, conn: conn, prepared: true, logger: pinned.logger))
                        #expect(deltas.count == 2)
                        let batched = try await DeltaBatcher.read(
                            [
                                .init(spaceID: small, collections: ["contacts"], since: 95),
                                .init(spaceID: large, collections: ["contacts", "events"], since: 3_990),
                            ], conn: conn, prepared: true, logger: pinned.logger)
                        #expect(batched.count == 2 && batched.allSatisfy { $0 != nil })
                    }
                    for name in [
                        PreparedStatements.CollectionDelta.name, PreparedStatements.Delta.name, PreparedStatements.Deltas.name,
                        PreparedStatements.BatchedDeltas.name,
                    ] {
                        let (generic, custom) = try await Self.planCounts(name, conn, pinned.logger)
                        #expect(custom <= 5 && generic >= 3, "\(name): \(generic) generic and \(custom) custom plans in 8 runs")
                    }
                    for family in [small, large] {
                        let delta = try await Self.plan(
                            "EXECUTE \(PreparedStatements.CollectionDelta.name)('\(family)', 'contacts', 90, true)", conn, pinned.logger)
                        #expect(delta.contains("items_delta") && !delta.contains("Seq Scan on items"), "\(delta)")
                        #expect(
                            delta.contains("collection = $") && delta.contains("parent_id = ''") && delta.contains("version > $"), "\(delta)")
                        let bundle = try await Self.plan(
                            "EXECUTE \(PreparedStatements.Delta.name)('\(family)', '{contacts,events}', 90, true)", conn, pinned.logger)
                        #expect(bundle.contains("items_delta") && bundle.contains("collection = ANY"), "\(bundle)")
                        let deltas = try await Self.plan(
                            """
                            EXECUTE \(PreparedStatements.Deltas.name)('\(family)', '{0,1}', '{contacts,events}', '{95,0}', '{t,f}', 2001)
                            """, conn, pinned.logger)
                        #expect(deltas.contains("items_delta") && !deltas.contains("Seq Scan on items"), "\(deltas)")
                        // Several requests' deltas: each call's rows through the index, never the table.
                        let batched = try await Self.plan(
                            """
                            EXECUTE \(PreparedStatements.BatchedDeltas.name)('{0,1,1}', '{\(small),\(family),\(family)}', \
                            '{contacts,contacts,events}', '{95,90,0}', '{t,t,f}')
                            """, conn, pinned.logger)
                        #expect(batched.contains("items_delta") && !batched.contains("Seq Scan on items"), "\(batched)")
                        #expect(batched.contains("families_pkey") && !batched.contains("Seq Scan on families"), "\(batched)")
                        #expect(batched.contains("version > r.after"), "\(batched)")
                    }
                }
            }
        }
    }

    @Test("on a new database the kept plan reads items_delta, and still does once the table has grown and been analysed")
    func planFollowsTheTable() async throws {
        try await Backend.postgres.withStore { opened in
            let store = try #require(opened as? PostgresStore)
            let family = try await ConcurrencyTests.newFamily(store).spaceID
            let other = try await ConcurrencyTests.newFamily(store).spaceID
            try await store.withReadSnapshot { pinned in
                let pinned = try #require(pinned as? PostgresSnapshot).store
                try await pinned.read { conn in
                    // A new database: the plan is made and kept on a table of no rows.
                    for _ in 0..<8 { _ = try await pinned.readDelta(spaceID: family, collections: ["contacts"], since: 1) }
                    let before = try await Self.plan(
                        "EXECUTE \(PreparedStatements.CollectionDelta.name)('\(family)', 'contacts', 1, true)", conn, pinned.logger)
                    // The table grows on other connections (50,000 rows of another family), and is analysed, as
                    // autovacuum would.
                    try await store.transaction(under: Deadline.Budget()) { writer in
                        try await writer.query("SET LOCAL session_replication_role = replica", logger: store.logger)
                        try await writer.query(
                            """
                            INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms)
                            SELECT \(other), 'contacts', '', 'i' || g, g, false, '{}', 0, g FROM generate_series(1, 50000) AS g
                            """, logger: store.logger)
                    }
                    try await store.transaction(under: Deadline.Budget()) { _ = try await $0.query("ANALYZE items", logger: store.logger) }
                    for _ in 0..<8 { _ = try await pinned.readDelta(spaceID: family, collections: ["contacts"], since: 1) }
                    let after = try await Self.plan(
                        "EXECUTE \(PreparedStatements.CollectionDelta.name)('\(family)', 'contacts', 1, true)", conn, pinned.logger)
                    #expect(before.contains("items_delta") && !before.contains("Seq Scan on items"), "\(before)")
                    #expect(after.contains("items_delta") && !after.contains("Seq Scan on items"), "\(after)")
                }
            }
        }
    }

    /// How many generic and custom plans the prepared statement `name` of this connection has made.
    static func planCounts(_ name: String, _ conn: PostgresConnection, _ logger: Logger) async throws -> (Int64, Int64) {
        let rows = try await conn.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = \(name)", logger: logger)
        var counts: [(Int64, Int64)] = []
        for try await row in rows { counts.append(try row.decode((Int64, Int64).self)) }
        return try #require(counts.first, "\(name) was not prepared")
    }

    /// The plan PostgreSQL runs for `statement`, as `EXPLAIN` prints it; run, with `analyze`, so that the nodes that
    /// did not run are marked "never executed".
    static func plan(_ statement: String, _ conn: PostgresConnection, _ logger: Logger, analyze: Bool = false) async throws -> String {
        var lines: [String] = []
        let explain = analyze ? "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " : "EXPLAIN "
        for try await line in try await conn.query(PostgresQuery(unsafeSQL: explain + statement), logger: logger) {
            lines.append(try line.decode(String.self))
        }
        return lines.joined(separator: "\n")
    }
}
