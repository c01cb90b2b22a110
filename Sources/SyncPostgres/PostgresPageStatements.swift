import Logging
import PostgresNIO
import SyncCore

/// A paginated sync and a page, one statement each (`PageStatementSQL`), prepared (`PreparedPageStatements`): where
/// the shared orchestration's 7 to 9 statements, inside a transaction of their own, would each be a round trip.
extension PostgresItemStatements {
    /// Columns of every part: part, pid (a child's parent), ord (a gone id's version), then the item columns.
    typealias PartRow = (Int32, String?, Int64, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)

    /// Everything a paginated sync decides from (protocol §4), in one statement; nil for an unknown family.
    func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows? {
        let rows =
            query.anchorID == nil
            ? try await conn.run(PreparedStatements.PageSync(familyID: familyID, query: query, since: since), prepared: prepared, logger: logger)
            : try await conn.run(
                PreparedStatements.AnchoredPageSync(familyID: familyID, query: query, since: since), prepared: prepared, logger: logger)
        return try await parts(rows).syncRows(query)
    }

    /// The live items below the anchor with their children, in one statement; nil when the anchor never existed.
    func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        let rows =
            query.anchorID == nil
            ? try await conn.run(PreparedStatements.Page(familyID: familyID, query: query), prepared: prepared, logger: logger)
            : try await conn.run(PreparedStatements.AnchoredPage(familyID: familyID, query: query), prepared: prepared, logger: logger)
        return try await parts(rows).pageRows(query)
    }

    private func parts<Rows: AsyncSequence>(_ rows: Rows) async throws -> PageParts where Rows.Element == PartRow {
        var parts = PageParts()
        for try await row in rows {
            parts.add(
                PagePart(rawValue: row.0), parent: row.1,
                item: StoredItem(
                    id: row.3 ?? "", version: row.4 ?? 0, deleted: row.5 ?? false, body: row.6, sortMs: row.7, sortVersion: row.8,
                    tag: row.9))
        }
        return parts
    }

    /// A row's columns, each decoded as its own type (`ColumnReader`).
    static func partRow(_ raw: PostgresRow) throws -> PartRow {
        var r = ColumnReader(raw)
        return (
            try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
            try r.next(), try r.next()
        )
    }
}
