import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// The page and full-list statements are planned once per connection, and a page sync's one plan reads its changes
/// the cheap way for both few and many changes (`PreparedPageStatements`): few through `items_delta` without walking
/// the list, many by walking the list's order; either way the answer is the changed items' newest, exactly.
@Suite("PostgreSQL plans of the page and full-list statements", .sharingTheMachine)
struct PostgresPagePlanTests {
    /// 20,000 contacts of one family, versions 1…20,000 in an order unlike the list's, one in ten deleted; and a small
    /// family of 50. Returns (small, large).
    static func seed(_ store: PostgresStore) async throws -> (String, String) {
        let small = try await ConcurrencyTests.newFamily(store).spaceID
        let large = try await ConcurrencyTests.newFamily(store).spaceID
        try await store.transaction(under: Deadline.Budget()) { conn in
            // The rows are the test's own: the usage counters' trigger (one update of the family per row) is off.
            try await conn.query("SET LOCAL session_replication_role = replica", logger: store.logger)
            for (family, count) in [(small, 50), (large, 20_000)] {
                try await conn.query(
                    """
                    INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms)
                    SELECT \(family), 'contacts', '', 'c' || g, g, g % 10 = 0, CASE WHEN g % 10 = 0 THEN NULL ELSE '{}' END, 0,
                      (g * 7919) % \(count)
                    FROM generate_series(1, \(count)) AS g
                    """, logger: store.logger)
                try await conn.query("UPDATE families SET version = \(Int64(count)) WHERE id = \(family)", logger: store.logger)
            }
        }
        try await store.transaction(under: Deadline.Budget()) { conn in _ = try await conn.query("ANALYZE items", logger: store.logger) }
        return (small, large)
    }

    @Test("a sync keeps one plan; few changes are read through items_delta, many by walking the list, both exactly")
    func syncReadsChangesBothWays() async throws {
        try await Self.onSeededSnapshot { pinned, conn, small, large in
            let query = PageQuery(collection: "contacts", anchorID: nil, limit: 20, tags: nil, children: nil)
            let anchored = PageQuery(collection: "contacts", anchorID: "c5", limit: 20, tags: nil, children: nil)
            for run in 0..<8 {
                let (family, top): (String, Int64) = run % 2 == 0 ? (small, 50) : (large, 20_000)
                _ = try await pinned.pageSync(spaceID: family, query: query, since: top - 10)
                _ = try await pinned.pageSync(spaceID: family, query: anchored, since: top - 10)
                _ = try await pinned.page(spaceID: family, query: query)
                _ = try await pinned.page(spaceID: family, query: anchored)
            }
            for name in [
                PreparedStatements.PageSync.name, PreparedStatements.AnchoredPageSync.name, PreparedStatements.Page.name,
                PreparedStatements.AnchoredPage.name,
            ] {
                let (generic, custom) = try await PostgresPlanTests.planCounts(name, conn, pinned.logger)
                #expect(custom <= 5 && generic >= 3, "\(name): \(generic) generic and \(custom) custom plans in 8 runs")
            }

            // Few changes (9 live ones): read through items_delta; the walk of the list never runs.
            let few = try await Self.plan(
                "EXECUTE \(PreparedStatements.PageSync.name)('\(large)', 'contacts', '', NULL, 21, NULL, 1, 4194304, 19990)", conn,
                pinned.logger)
            #expect(few.contains("items_delta") && !few.contains("Seq Scan on items"), "\(few)")
            #expect(Self.walk(few).contains("never executed"), "\(few)")
            // And its answer is those changes: the list's first page is never read (nor its children).
            #expect(Self.itemsScan(under: "CTE top", few).contains("(never executed)"), "\(few)")
            // Many (1,800 live ones): more than the statement sorts itself, so it walks the list.
            let many = try await Self.plan(
                "EXECUTE \(PreparedStatements.PageSync.name)('\(large)', 'contacts', '', NULL, 21, NULL, 1, 4194304, 18000)", conn,
                pinned.logger)
            #expect(!Self.walk(many).contains("never executed"), "\(many)")
            // Too many for a page: the answer is the list's first page (`crop`), read.
            #expect(Self.itemsScan(under: "CTE top", many).contains("(actual rows=21 "), "\(many)")

            for since: Int64 in [19_990, 19_000, 18_000, 0] {
                for anchor in [nil, "c5", "c16000"] {
                    let q = PageQuery(collection: "contacts", anchorID: anchor, limit: 20, tags: nil, children: nil)
                    let rows = try await pinned.pageSync(spaceID: large, query: q, since: since)
                    let expected = try await Self.newestChanged(large, since: since, atOrAbove: anchor, conn, pinned.logger)
                    #expect(rows.changed.map(\.id) == expected, "since \(since), anchor \(anchor ?? "none")")
                    if anchor == nil, since < 19_990 { #expect(expected.count == 21) }
                }
            }
        }
    }

    @Test("a full list keeps one plan, which reads the family's list by an index, and every live row")
    func fullListPlan() async throws {
        try await Self.onSeededSnapshot { pinned, conn, small, large in
            for run in 0..<8 {
                let (family, live) = run % 2 == 0 ? (small, 45) : (large, 18_000)
                var bodies = 0
                try await pinned.forEachLivePage(on: conn, spaceID: family, collection: "contacts") { bodies += $0.count }
                var rows = 0
                for try await _ in try await conn.run(
                    PreparedStatements.LiveRows(spaceID: family, collection: "contacts"), prepared: true, logger: pinned.logger)
                {
                    rows += 1
                }
                #expect(bodies == live && rows == live)
            }
            for name in [PreparedStatements.LiveRows.name, PreparedStatements.SnapshotLiveRows.name] {
                let (generic, custom) = try await PostgresPlanTests.planCounts(name, conn, pinned.logger)
                #expect(custom <= 5 && generic >= 3, "\(name): \(generic) generic and \(custom) custom plans in 8 runs")
            }
            let plan = try await PostgresPlanTests.plan(
                "EXECUTE \(PreparedStatements.LiveRows.name)('\(large)', 'contacts')", conn, pinned.logger)
            // Through items_delta or items_order, as the statistics make it cheaper: either way the family's
            // list by its index, never the table (the sort by version is the old statement's too).
            #expect(!plan.contains("Seq Scan on items") && plan.contains("Index Cond: ((family_id = "), "\(plan)")
        }
    }

    /// `body` on a snapshot's connection of a store that `seed` filled: the store pinned to it, its connection, and
    /// the small and the large family.
    static func onSeededSnapshot(
        _ body: @escaping @Sendable (PostgresStore, PostgresConnection, _ small: String, _ large: String) async throws -> Void
    ) async throws {
        try await Backend.postgres.withStore { opened in
            let store = try #require(opened as? PostgresStore)
            let (small, large) = try await Self.seed(store)
            try await store.withReadSnapshot { pinned in
                let pinned = try #require(pinned as? PostgresSnapshot).store
                try await pinned.read { conn in try await body(pinned, conn, small, large) }
            }
        }
    }

    /// The ids a sync's `changed` must hold: the 21 newest in the list's order of the live items changed after `since`
    /// (at or above the anchor), read with a plan made for these values.
    static func newestChanged(
        _ family: String, since: Int64, atOrAbove anchor: String?, _ conn: PostgresConnection, _ logger: Logger
    ) async throws -> [String] {
        let bound =
            anchor.map {
                " AND (sort_ms, id) >= (SELECT coalesce(sort_ms, 0), id FROM items WHERE family_id = '\(family)' "
                    + "AND collection = 'contacts' AND parent_id = '' AND id = '\($0)')"
            } ?? ""
        let sql = """
            SELECT id FROM items WHERE family_id = '\(family)' AND collection = 'contacts' AND parent_id = '' AND NOT deleted \
            AND version > \(since)\(bound) ORDER BY sort_ms DESC, id DESC LIMIT 21
            """
        var ids: [String] = []
        for try await row in try await conn.query(PostgresQuery(unsafeSQL: sql), logger: logger) { ids.append(try row.decode(String.self)) }
        return ids
    }

    /// The node of `plan` that walks the list for many changes (the scan whose filter is `version + 0 > …`) and the
    /// lines down to that filter.
    static func walk(_ plan: String) -> String {
        let lines = plan.split(separator: "\n")
        guard let filter = lines.firstIndex(where: { $0.contains("(version + 0) >") }),
            let node = lines[..<filter].lastIndex(where: { $0.contains("Scan") })
        else { return "no walk in the plan" }
        return lines[node...filter].joined(separator: "\n")
    }

    /// The scan of the items table in the subtree of `plan` under the line that names `node`.
    static func itemsScan(under node: String, _ plan: String) -> String {
        let lines = plan.split(separator: "\n")
        let depth = { (line: Substring) in line.prefix { $0 == " " }.count }
        guard let start = lines.firstIndex(where: { $0.contains(node) }) else { return "no \(node) in the plan" }
        let subtree = lines[(start + 1)...].prefix { depth($0) > depth(lines[start]) }
        return subtree.first { $0.contains("Scan") && $0.contains(" on items ") }.map(String.init) ?? "no scan of items under \(node)"
    }

    /// The plan PostgreSQL ran for `statement`, with the nodes that did not run marked "never executed".
    static func plan(_ statement: String, _ conn: PostgresConnection, _ logger: Logger) async throws -> String {
        try await PostgresPlanTests.plan(statement, conn, logger, analyze: true)
    }
}
