import Logging
import PostgresNIO

/// A paginated sync and a page, one statement each on PostgreSQL (issue 19: a page sync was 7 to 9 statements, each a
/// round trip, inside a transaction of its own). Every part the engine decides from is a common table expression of
/// one query, tagged by `Part` in its rows, so all of them read the statement's one snapshot: the same answer as the
/// shared orchestration (`readPageSync`, which SQLite keeps: it has no round trips to save), in one round trip.
extension PostgresItemStatements {
    /// What a row of the answer is.
    enum Part: Int32 {
        /// The family's counter (`version`) and purge horizon (`sort_ms`).
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
    func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows? {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 2048, interpolationCount: 40)
        sql.appendLiteral("WITH ")
        if let anchorID = query.anchorID { anchor(&sql, familyID, query, anchorID) }
        if let since {
            sql.appendLiteral("changed AS (")
            list(&sql, familyID, query)
            sql.appendLiteral(" AND version > ")
            sql.appendInterpolation(since)
            if query.anchorID != nil { sql.appendLiteral(" AND (sort_ms, id) >= (SELECT coalesce(sort_ms, 0), id FROM anchor)") }
            sql.appendLiteral(" ORDER BY sort_ms DESC, id DESC LIMIT ")
            sql.appendInterpolation(query.limit + 1)
            sql.appendLiteral("), ")
        }
        sql.appendLiteral("top AS (")
        list(&sql, familyID, query)
        sql.appendLiteral(" ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(query.limit + 1)
        sql.appendLiteral(")")
        if query.anchorID != nil {
            sql.appendLiteral(", below AS (")
            list(&sql, familyID, query)
            sql.appendLiteral(" AND (sort_ms, id) < (SELECT coalesce(sort_ms, 0), id FROM anchor) ORDER BY sort_ms DESC, id DESC LIMIT 1)")
        }
        sql.appendLiteral(", bottom AS (")
        list(&sql, familyID, query)
        sql.appendLiteral(" ORDER BY sort_ms ASC, id ASC LIMIT 1)")
        sql.appendLiteral(" SELECT \(Self.named(version: "version", sortMs: "horizon")) FROM families WHERE id = ")
        sql.appendInterpolation(familyID)
        if query.anchorID != nil { part(&sql, .anchor, from: "anchor") }
        if since != nil { part(&sql, .changed, from: "changed") }
        part(&sql, .top, from: "top")
        if query.anchorID != nil { part(&sql, .below, from: "below") }
        part(&sql, .bottom, from: "bottom")
        if let since {
            // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
            sql.appendLiteral(" UNION ALL SELECT \(Part.gone.rawValue), NULL, version, id, NULL, NULL, NULL, NULL, NULL, NULL FROM items")
            sql.appendLiteral(" WHERE family_id = ")
            sql.appendInterpolation(familyID)
            sql.appendLiteral(" AND collection = ")
            sql.appendInterpolation(query.collection)
            sql.appendLiteral(" AND parent_id = ")
            sql.appendInterpolation(query.parentID)
            sql.appendLiteral(" AND version > ")
            sql.appendInterpolation(since)
            sql.appendLiteral(" AND (deleted OR (")
            sql.appendInterpolation(query.tags != nil)
            sql.appendLiteral(" AND NOT coalesce(tag = ANY(")
            sql.appendInterpolation(query.tags ?? [])
            sql.appendLiteral("), false)))")
        }
        if let children = query.children {
            appendChildren(&sql, familyID, children, parents: since != nil ? "SELECT id FROM changed UNION SELECT id FROM top" : "SELECT id FROM top")
        }
        sql.appendLiteral(Self.order)

        var family: FamilyCounter?
        var anchor: StoredItem?
        var changed: [StoredItem] = []
        var top: [StoredItem] = []
        var belowAnchor = false
        var bottom: StoredItem?
        var gone: [String] = []
        var kids: [String: [StoredItem]] = [:]
        for try await raw in try await conn.query(PostgresQuery(stringInterpolation: sql), logger: logger) {
            let row = try Self.partRow(raw)
            switch Part(rawValue: row.0) {
            case .family: family = FamilyCounter(version: row.4 ?? 0, horizon: row.7 ?? 0)
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
            // Every parent has an entry, children or not (as `children(_:familyID:of:)` answers).
            for parent in changed + top where kids[parent.id] == nil { kids[parent.id] = [] }
        }
        return PageSyncRows(
            version: family.version, horizon: family.horizon, anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
            bottom: bottom, deleted: gone, children: kids)
    }

    /// The live items below the anchor with their children, in one statement; nil when the anchor never existed.
    func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 1024, interpolationCount: 20)
        sql.appendLiteral("WITH ")
        if let anchorID = query.anchorID { anchor(&sql, familyID, query, anchorID) }
        sql.appendLiteral("top AS (")
        list(&sql, familyID, query)
        if query.anchorID != nil { sql.appendLiteral(" AND (sort_ms, id) < (SELECT coalesce(sort_ms, 0), id FROM anchor)") }
        sql.appendLiteral(" ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(query.limit + 1)
        sql.appendLiteral(")")
        // The family row stands for "the statement answered" when there is no anchor to find.
        sql.appendLiteral(" SELECT \(Self.named(version: "NULL::int8", sortMs: "NULL::int8"))")
        if query.anchorID != nil { part(&sql, .anchor, from: "anchor") }
        part(&sql, .top, from: "top")
        if let children = query.children { appendChildren(&sql, familyID, children, parents: "SELECT id FROM top") }
        sql.appendLiteral(Self.order)

        var anchorFound = false
        var items: [StoredItem] = []
        var kids: [String: [StoredItem]] = [:]
        for try await raw in try await conn.query(PostgresQuery(stringInterpolation: sql), logger: logger) {
            let row = try Self.partRow(raw)
            switch Part(rawValue: row.0) {
            case .anchor: anchorFound = true
            case .top: items.append(Self.item(row))
            case .child: kids[row.1 ?? "", default: []].append(Self.item(row))
            default: break
            }
        }
        if query.anchorID != nil, !anchorFound { return nil }
        if query.children != nil { for parent in items where kids[parent.id] == nil { kids[parent.id] = [] } }
        return PageRows(items: items, children: kids)
    }

    /// `anchor AS (…), `: the `lastId` row, live or tombstone.
    private func anchor(_ sql: inout PostgresQuery.StringInterpolation, _ familyID: String, _ query: PageQuery, _ anchorID: String) {
        sql.appendLiteral("anchor AS (SELECT \(Self.columns) FROM items WHERE family_id = ")
        sql.appendInterpolation(familyID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(query.collection)
        sql.appendLiteral(" AND parent_id = ")
        sql.appendInterpolation(query.parentID)
        sql.appendLiteral(" AND id = ")
        sql.appendInterpolation(anchorID)
        sql.appendLiteral("), ")
    }

    /// The live items of the page's list, its tag filter applied (served by the index `items_order`).
    private func list(_ sql: inout PostgresQuery.StringInterpolation, _ familyID: String, _ query: PageQuery) {
        sql.appendLiteral("SELECT \(Self.columns) FROM items WHERE family_id = ")
        sql.appendInterpolation(familyID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(query.collection)
        sql.appendLiteral(" AND parent_id = ")
        sql.appendInterpolation(query.parentID)
        sql.appendLiteral(" AND NOT deleted")
        if let tags = query.tags {
            sql.appendLiteral(" AND tag = ANY(")
            sql.appendInterpolation(tags)
            sql.appendLiteral(")")
        }
    }

    /// ` UNION ALL` the rows of a part's expression.
    private func part(_ sql: inout PostgresQuery.StringInterpolation, _ part: Part, from name: String) {
        sql.appendLiteral(" UNION ALL SELECT \(part.rawValue), NULL, 0, \(Self.columns) FROM \(name)")
    }

    /// ` UNION ALL` the newest `limit + 1` live children of each parent the `parents` query names (a lateral read of
    /// `items_order` per parent).
    private func appendChildren(
        _ sql: inout PostgresQuery.StringInterpolation, _ familyID: String, _ children: ChildrenQuery, parents: String
    ) {
        sql.appendLiteral(" UNION ALL SELECT \(Part.child.rawValue), p.pid, 0, c.* FROM (\(parents)) p(pid) CROSS JOIN LATERAL (")
        sql.appendLiteral("SELECT \(Self.columns) FROM items WHERE family_id = ")
        sql.appendInterpolation(familyID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(children.collection)
        sql.appendLiteral(" AND parent_id = p.pid AND NOT deleted ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(children.limit + 1)
        sql.appendLiteral(") c")
    }

    /// The first row, which names the columns of all (and makes the text ones collate as `items` does: "C").
    private static func named(version: String, sortMs: String) -> String {
        """
        \(Part.family.rawValue) AS part, NULL::text COLLATE "C" AS pid, 0::int8 AS ord, NULL::text COLLATE "C" AS id, \
        \(version) AS version, NULL::bool AS deleted, NULL::text AS body, \(sortMs) AS sort_ms, NULL::int8 AS sort_version, \
        NULL::text AS tag
        """
    }

    /// Parts in order; in a part, `gone` by version, children by parent, and items in the list's order.
    private static let order = " ORDER BY part, pid, ord, sort_ms DESC, id DESC"

    /// A row's columns, each decoded as its own type (`ColumnReader`).
    private static func partRow(_ raw: PostgresRow) throws -> PartRow {
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
