/// A paginated sync and a page (protocol §4), one statement each, in either backend's SQL: the one form of the rules
/// that decide an answer (when the date is answerable, when the answer is a fresh first page, which ids are gone, which
/// children come along). The shared orchestration (`readPageSync`, `readPage`) reads the same answer step by step and
/// is kept as the reference the tests hold this statement to.
///
/// Every part the engine decides from is a common table expression, tagged by `PagePart` in its rows, so that all of
/// them read the statement's one snapshot. A statement's shape is fixed by whether a `lastId` anchor is given (it
/// bounds the index walk, so it cannot be a filter); everything else is a parameter.
///
/// On PostgreSQL each parameter is read through a sub-select, so that no plan depends on it and the prepared statement
/// keeps its generic plan: the tag filter (NULL: all), the children (a NULL collection: none) and, for a sync, the
/// date's version (NULL: none, and a `version >` NULL matches nothing). The one part whose best plan depends on a value
/// is the sync's `changed` (the newest items changed after the date, in the list's order): through `items_delta` when
/// few changed, walking the list's order when many did. So the statement reads both ways, each bounded: the changed
/// items in version order up to `changedReadLimit + 1`, and only when there are more than that, a walk of the list's
/// order (its bound hidden from `items_delta`, so that it is always a walk).
package struct PageStatementSQL: Sendable {
    package let dialect: SQLDialect

    package static let postgres = PageStatementSQL(dialect: .postgres)
    package static let sqlite = PageStatementSQL(dialect: .sqlite)

    /// How many changed items a sync sorts itself before it walks the list instead.
    package static let changedReadLimit = 1000

    /// The columns of every item part, in `StoredItem` order.
    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"

    // The parameters, numbered as `values(familyID:query:since:)` gives them.
    private var family: String { parameter(1, "text") }
    private var collection: String { parameter(2, "text") }
    private var parent: String { parameter(3, "text") }
    /// The tags (NULL: no filter): a `text[]` on PostgreSQL, a JSON array on SQLite.
    private var tags: String { parameter(4, "text[]") }
    private var limit: String { parameter(5, "int8") }
    private var childCollection: String { parameter(6, "text") }
    private var childLimit: String { parameter(7, "int8") }
    /// The bytes of bodies the parents may hold, and as many the children (`PageBytes`).
    private var budget: String { parameter(8, "int8") }
    /// `9`: the sync's version; the page's anchor.
    private var since: String { parameter(9, "int8") }
    private func anchorID(sync: Bool) -> String { parameter(sync ? 10 : 9, "text") }

    private func parameter(_ number: Int, _ type: String) -> String {
        switch dialect {
        case .postgres: "(SELECT $\(number)::\(type))"
        case .sqlite: "?\(number)"
        }
    }

    /// `tag` is one of the tags.
    private var tagIsListed: String {
        switch dialect {
        case .postgres: "tag = ANY(\(tags)::text[])"
        case .sqlite: "tag IN (SELECT value FROM json_each(\(tags)))"
        }
    }

    private func bytes(_ text: String) -> String {
        switch dialect {
        case .postgres: "octet_length(\(text))"
        case .sqlite: "length(CAST(\(text) AS BLOB))"
        }
    }

    private var anchorBound: String { "(SELECT coalesce(sort_ms, 0), id FROM anchor)" }

    /// The live items of the list, its tag filter applied.
    private var list: String {
        """
        SELECT \(Self.columns) FROM items WHERE family_id = \(family) AND collection = \(collection) \
        AND parent_id = \(parent) AND NOT deleted AND (\(tags) IS NULL OR \(tagIsListed))
        """
    }

    /// The SQL of a paginated sync, with or without an anchor.
    package func sync(anchored: Bool) -> String {
        let atOrAbove = anchored ? " AND (sort_ms, id) >= \(anchorBound)" : ""
        var sql = "WITH "
        if anchored { sql += anchor(sync: true) }
        sql += """
            changed_by_version AS MATERIALIZED (\(list) AND version > \(since)\(atOrAbove) \
            ORDER BY version LIMIT \(Self.changedReadLimit + 1)), \
            changed AS (SELECT * FROM (SELECT \(Self.columns) FROM changed_by_version ORDER BY sort_ms DESC, id DESC \
            LIMIT \(limit)) few WHERE (SELECT count(*) FROM changed_by_version) <= \(Self.changedReadLimit) \
            UNION ALL SELECT * FROM (\(list) AND version + 0 > \(since)\(atOrAbove) \
            ORDER BY sort_ms DESC, id DESC LIMIT \(limit)) many \
            WHERE (SELECT count(*) FROM changed_by_version) > \(Self.changedReadLimit)), \
            first_page AS MATERIALIZED (SELECT \(firstPageNeeded(anchored: anchored)) AS needed), \
            top AS (\(list) AND (SELECT needed FROM first_page) ORDER BY sort_ms DESC, id DESC LIMIT \(limit))
            """
        if anchored {
            sql += ", below AS (\(list) AND (sort_ms, id) < \(anchorBound) ORDER BY sort_ms DESC, id DESC LIMIT 1)"
        }
        sql += ", bottom AS (\(list) ORDER BY sort_ms ASC, id ASC LIMIT 1)"
        sql +=
            " SELECT \(named(version: "version", sortMs: "horizon", firstPage: "(SELECT needed FROM first_page)")) FROM families WHERE id = \(family)"
        if anchored { sql += part(.anchor, from: "anchor") }
        // The changes' bodies only when the answer is made of them; the first page's within the budget.
        sql += part(.changed, from: "changed", body: "CASE WHEN (SELECT needed FROM first_page) THEN NULL ELSE body END")
        sql += part(.top, from: "top", body: budgeted("body", order: "sort_ms DESC, id DESC"))
        if anchored { sql += part(.below, from: "below") }
        sql += part(.bottom, from: "bottom")
        // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
        sql += """
             UNION ALL SELECT \(PagePart.gone.rawValue), NULL, version, id, NULL, NULL, NULL, NULL, NULL, NULL FROM items \
            WHERE family_id = \(family) AND collection = \(collection) AND parent_id = \(parent) \
            AND version > \(since) AND (deleted OR (\(tags) IS NOT NULL AND NOT coalesce(\(tagIsListed), false)))
            """
        // The children of the answer's list: the first page when there is one, else the changes.
        let parents = "SELECT id, sort_ms FROM top UNION ALL SELECT id, sort_ms FROM changed WHERE NOT EXISTS (SELECT 1 FROM top)"
        return sql + children(of: parents) + Self.order
    }

    /// The SQL of a page: the live items below the anchor (or the first ones), with their children.
    package func page(anchored: Bool) -> String {
        var sql = "WITH "
        if anchored { sql += anchor(sync: false) }
        sql += "top AS (\(list)"
        if anchored { sql += " AND (sort_ms, id) < \(anchorBound)" }
        sql += " ORDER BY sort_ms DESC, id DESC LIMIT \(limit))"
        // The first row stands for "the statement answered" when there is no anchor to find.
        sql += " SELECT \(named(version: "NULL", sortMs: "NULL", firstPage: "NULL"))"
        if anchored { sql += part(.anchor, from: "anchor") }
        return sql + part(.top, from: "top", body: budgeted("body", order: "sort_ms DESC, id DESC"))
            + children(of: "SELECT id, sort_ms FROM top") + Self.order
    }

    /// `PageSyncRows.needsFirstPage` in SQL, a value of the statement (tested once, before `top` is read): the date
    /// cannot be answered (`PageSyncRows.answerable`: no date, a date past the family's counter or before its purge
    /// horizon, an anchor unknown or moved since the date), or more items changed than fit.
    private func firstPageNeeded(anchored: Bool) -> String {
        var answerable = "coalesce((SELECT \(since) <= version AND \(since) >= horizon FROM families WHERE id = \(family)), false)"
        if anchored { answerable += " AND coalesce((SELECT sort_version <= \(since) FROM anchor), false)" }
        // `changed` holds at most `limit + 1` rows (the parameter): all of them means more than the page holds. Their
        // bodies past the budget mean the same (`PageBytes`: a second body pushing the total past it).
        return """
            (NOT (\(answerable)) OR (SELECT count(*) FROM changed) >= \(limit) \
            OR ((SELECT count(*) FROM changed) > 1 AND (SELECT sum(\(bytes("body"))) FROM changed) > \(budget)))
            """
    }

    /// `anchor AS (…), `: the `lastId` row, live or tombstone.
    private func anchor(sync: Bool) -> String {
        """
        anchor AS (SELECT \(Self.columns) FROM items WHERE family_id = \(family) AND collection = \(collection) \
        AND parent_id = \(parent) AND id = \(anchorID(sync: sync))), \

        """
    }

    /// ` UNION ALL` the rows of a part's expression, its body as `body` says.
    private func part(_ part: PagePart, from name: String, body: String = "body") -> String {
        " UNION ALL SELECT \(part.rawValue), NULL, 0, id, version, deleted, \(body), sort_ms, sort_version, tag FROM \(name)"
    }

    /// `PageBytes` in SQL: the body while the running total of the bodies in `order` is within the budget, the first
    /// always, NULL after.
    private func budgeted(_ body: String, order: String) -> String {
        """
        CASE WHEN sum(\(bytes(body))) OVER (ORDER BY \(order) ROWS UNBOUNDED PRECEDING) <= \(budget) \
        OR row_number() OVER (ORDER BY \(order)) = 1 THEN \(body) END
        """
    }

    /// ` UNION ALL` the newest `limit + 1` live children of each of the first `limit` parents the `parents` query names
    /// (`id`, `sort_ms`; an index read of `items_order` per parent), when a children collection is given: by parent, in
    /// the parents' order (`ord`), their bodies within the budget over that order.
    private func children(of parents: String) -> String {
        let order = "c.ord, c.sort_ms DESC, c.id DESC"
        let numbered = """
            (SELECT id AS pid, ord FROM (SELECT id, row_number() OVER (ORDER BY sort_ms DESC, id DESC) AS ord FROM (\(parents)) x) n \
            WHERE ord < \(limit)) p
            """
        let newest = "ORDER BY sort_ms DESC, id DESC LIMIT \(childLimit)"
        let kids: String
        switch dialect {
        case .postgres:
            kids = """
                SELECT p.pid, p.ord, k.* FROM \(numbered) CROSS JOIN LATERAL (SELECT \(Self.columns) FROM items \
                WHERE family_id = \(family) AND collection = \(childCollection) AND parent_id = p.pid AND NOT deleted \(newest)) k
                """
        case .sqlite:
            // No LATERAL: each parent's newest children by their ids, read through the same index.
            kids = """
                SELECT p.pid, p.ord, k.id, k.version, k.deleted, k.body, k.sort_ms, k.sort_version, k.tag FROM \
                \(numbered) JOIN items k ON k.family_id = \(family) \
                AND k.collection = \(childCollection) AND k.parent_id = p.pid AND NOT k.deleted AND k.id IN (SELECT id FROM items \
                WHERE family_id = \(family) AND collection = \(childCollection) AND parent_id = p.pid AND NOT deleted \(newest))
                """
        }
        return """
             UNION ALL SELECT \(PagePart.child.rawValue), c.pid, c.ord, c.id, c.version, c.deleted, \(budgeted("c.body", order: order)), \
            c.sort_ms, c.sort_version, c.tag FROM (\(kids) WHERE \(childCollection) IS NOT NULL) c
            """
    }

    /// The first row, which names the columns of all (on PostgreSQL, and makes the text ones collate as `items`
    /// does: "C"); a sync's says in `deleted` whether the answer is a fresh first page.
    private func named(version: String, sortMs: String, firstPage: String) -> String {
        switch dialect {
        case .postgres:
            """
            \(PagePart.family.rawValue) AS part, NULL::text COLLATE "C" AS pid, 0::int8 AS ord, NULL::text COLLATE "C" AS id, \
            \(version == "NULL" ? "NULL::int8" : version) AS version, \(firstPage == "NULL" ? "NULL::bool" : firstPage) AS deleted, \
            NULL::text AS body, \(sortMs == "NULL" ? "NULL::int8" : sortMs) AS sort_ms, NULL::int8 AS sort_version, NULL::text AS tag
            """
        case .sqlite:
            """
            \(PagePart.family.rawValue) AS part, NULL AS pid, 0 AS ord, NULL AS id, \(version) AS version, \(firstPage) AS deleted, \
            NULL AS body, \(sortMs) AS sort_ms, NULL AS sort_version, NULL AS tag
            """
        }
    }

    /// Parts in order; in a part, `gone` by version, children by their parent's place, and items in the list's order.
    private static let order = " ORDER BY part, ord, pid, sort_ms DESC, id DESC"
}

/// What a row of a page statement is.
package enum PagePart: Int32, Sendable {
    /// The family's counter (`version`), purge horizon (`sort_ms`) and, for a sync, whether the answer is a fresh first
    /// page (`deleted`).
    case family = 0
    case anchor, changed, top, below, bottom
    /// An id to drop (`id`), in version order (`ord`).
    case gone
    /// A child (`pid`: its parent).
    case child
}

/// The rows of a page statement, gathered into the answer the engine decides from.
package struct PageParts: Sendable {
    private var family: FamilyCounter?
    private var firstPage = false
    private var anchor: StoredItem?
    private var changed: [StoredItem] = []
    private var top: [StoredItem] = []
    private var belowAnchor = false
    private var bottom: StoredItem?
    private var gone: [String] = []
    private var children: [String: [StoredItem]] = [:]

    package init() {}

    /// One row: its part, a child's parent, and its item columns (the family row's counter in `version`, its horizon
    /// in `sortMs` and its first-page flag in `deleted`).
    package mutating func add(_ part: PagePart?, parent: String?, item: StoredItem) {
        switch part {
        case .family:
            family = FamilyCounter(version: item.version, horizon: item.sortMs ?? 0)
            firstPage = item.deleted
        case .anchor: anchor = item
        case .changed: changed.append(item)
        case .top: top.append(item)
        case .below: belowAnchor = true
        case .bottom: bottom = item
        case .gone: gone.append(item.id)
        case .child: children[parent ?? "", default: []].append(item)
        case nil: break
        }
    }

    /// The paginated sync's rows; nil for an unknown family.
    package func syncRows(_ query: PageQuery) -> PageSyncRows? {
        guard let family else { return nil }
        return PageSyncRows(
            version: family.version, horizon: family.horizon, anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
            bottom: bottom, deleted: gone, children: everyParent(query, PageSyncRows.parents(changed: changed, top: top, limit: query.limit)),
            firstPage: firstPage)
    }

    /// The page's rows; nil when its anchor never existed.
    package func pageRows(_ query: PageQuery) -> PageRows? {
        if query.anchorID != nil, anchor == nil { return nil }
        return PageRows(items: top, children: everyParent(query, PageSyncRows.parents(changed: [], top: top, limit: query.limit)))
    }

    /// Every parent has an entry, children or not (as `ItemStatements.children` answers).
    private func everyParent(_ query: PageQuery, _ parents: [String]) -> [String: [StoredItem]] {
        guard query.children != nil else { return children }
        var out = children
        for parent in parents where out[parent] == nil { out[parent] = [] }
        return out
    }
}
