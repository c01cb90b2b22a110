import Logging
import PostgresNIO
import SyncAPI

/// A paginated sync and a page, one statement each on PostgreSQL, where the shared orchestration's 7 to 9 statements,
/// inside a transaction of their own, would each be a round trip. Every part the engine decides from is a common table
/// expression of one query, tagged by `Part` in its rows, so all of them read the statement's one snapshot: the same
/// answer as the shared orchestration (`readPageSync`, which SQLite keeps: it has no round trips to save), in one round
/// trip. The statements are prepared, planned once per connection (`PreparedPageStatements`).
extension PostgresItemStatements {
    /// What a row of the answer is.
    enum Part: Int32 {
        /// The family's counter (`version`), purge horizon (`sort_ms`) and line (`body`, `SpaceLineage`).
        case family = 0
        case anchor, changed, top, below, bottom
        /// An id to drop (`id`), in version order.
        case gone
        /// A child (`pid`: its parent).
        case child
    }

    /// Columns of every part: part, pid (a child's parent), ord (a gone id's version), then the item columns.
    typealias PartRow = (Int32, String?, Int64, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)

    /// Everything a paginated sync decides from (protocol §4), in one statement; nil for an unknown family.
    func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows? {
        var family: FamilyCounter?
        var firstPage = false
        var anchor: StoredItem?
        var changed: [StoredItem] = []
        var top: [StoredItem] = []
        var belowAnchor = false
        var bottom: StoredItem?
        var gone: [String] = []
        var kids: [String: [StoredItem]] = [:]
        let rows =
            query.anchorID == nil
            ? try await conn.run(PreparedStatements.PageSync(spaceID: spaceID, query: query, since: since), prepared: prepared, logger: logger)
            : try await conn.run(
                PreparedStatements.AnchoredPageSync(spaceID: spaceID, query: query, since: since), prepared: prepared, logger: logger)
        for try await row in rows {
            switch Part(rawValue: row.0) {
            case .family:
                family = FamilyCounter(version: row.4 ?? 0, horizon: row.7 ?? 0, lineage: SpaceLineage.read(row.6))
                firstPage = row.5 ?? false
            case .anchor: anchor = Self.item(row)
            case .changed: changed.append(Self.item(row))
            case .top: top.append(Self.item(row))
            case .below: belowAnchor = true
            case .bottom: bottom = Self.item(row)
            case .gone: gone.append(row.3 ?? "")
            case .child: kids[row.1 ?? "", default: []].append(Self.item(row))
            case nil: break
            }
        }
        guard let family else { return nil }
        if query.children != nil {
            // Every parent has an entry, children or not (as `children(_:spaceID:of:budget:)` answers).
            for parent in PageSyncRows.parents(changed: changed, top: top, limit: query.limit) where kids[parent] == nil {
                kids[parent] = []
            }
        }
        return PageSyncRows(
            version: family.version, horizon: family.horizon, anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
            bottom: bottom, deleted: gone, children: kids, firstPage: firstPage, lineage: family.lineage)
    }

    /// The live items below the anchor with their children, in one statement; nil when the anchor never existed.
    func page(spaceID: String, query: PageQuery) async throws -> PageRows? {
        var anchorFound = false
        var items: [StoredItem] = []
        var kids: [String: [StoredItem]] = [:]
        let rows =
            query.anchorID == nil
            ? try await conn.run(PreparedStatements.Page(spaceID: spaceID, query: query), prepared: prepared, logger: logger)
            : try await conn.run(PreparedStatements.AnchoredPage(spaceID: spaceID, query: query), prepared: prepared, logger: logger)
        for try await row in rows {
            switch Part(rawValue: row.0) {
            case .anchor: anchorFound = true
            case .top: items.append(Self.item(row))
            case .child: kids[row.1 ?? "", default: []].append(Self.item(row))
            default: break
            }
        }
        if query.anchorID != nil, !anchorFound { return nil }
        if query.children != nil {
            for parent in PageSyncRows.parents(changed: [], top: items, limit: query.limit) where kids[parent] == nil { kids[parent] = [] }
        }
        return PageRows(items: items, children: kids)
    }

    /// A row's columns, each decoded as its own type (`ColumnReader`).
    static func partRow(_ raw: PostgresRow) throws -> PartRow {
        var r = ColumnReader(raw)
        return (
            try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
            try r.next(), try r.next()
        )
    }

    private static func item(_ row: PartRow) -> StoredItem {
        StoredItem(
            id: row.3 ?? "", version: row.4 ?? 0, deleted: row.5 ?? false, body: row.6, sortMs: row.7, sortVersion: row.8, tag: row.9)
    }
}
