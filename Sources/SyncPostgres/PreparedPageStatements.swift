import PostgresNIO
import SyncAPI

/// A paginated sync and a page as prepared statements, planned once per connection like the deltas: planning a page
/// statement again on every run would be more than half of PostgreSQL's time for it.
///
/// A statement's shape is fixed by whether a `lastId` anchor is given (it bounds the index walk, so it cannot be a
/// filter). Everything else is a value read through a sub-select, so that no plan depends on it and PostgreSQL keeps
/// the generic one: the tag filter (NULL: all), the children (a NULL collection: none) and, for a sync, the date's
/// version (NULL: none, and a `version >` NULL matches nothing).
///
/// The one part whose best plan depends on a value is the sync's `changed` (the newest items changed after the date,
/// in the list's order): through `items_delta` when few changed, walking the list's order when many did. A value-blind
/// plan would have to pick one, and either is slow on the other case (a walk for a few changes in a long list reads the
/// whole list). So the statement reads both ways, each bounded: the changed items in version order up to
/// `changedReadLimit + 1`, and only when there are more than that, a walk of the list's order (its bound hidden
/// from `items_delta`, so that it is always a walk), which then finds the page's rows among many changes
/// (`PostgresPlanTests`).
enum PreparedPageStatements {
    /// How many changed items a sync sorts itself before it walks the list instead.
    static let changedReadLimit = 1000

    /// The parameters, numbered as the SQL reads them.
    private enum Parameter {
        static let family = "(SELECT $1::text)"
        static let collection = "(SELECT $2::text)"
        static let parent = "(SELECT $3::text)"
        static let tags = "(SELECT $4::text[])"
        static let limit = "(SELECT $5::int8)"
        static let childCollection = "(SELECT $6::text)"
        static let childLimit = "(SELECT $7::int8)"
        /// The bytes of bodies the parents may hold, and as many the children (`PageBytes`).
        static let budget = "(SELECT $8::int8)"
        /// `$9`: the sync's version; the page's anchor.
        static let since = "(SELECT $9::int8)"
        static func anchor(sync: Bool) -> String { sync ? "(SELECT $10::text)" : "(SELECT $9::text)" }
    }

    private typealias Part = PostgresItemStatements.Part
    private static let columns = PostgresItemStatements.columns
    private static let anchorBound = "(SELECT coalesce(sort_ms, 0), id FROM anchor)"

    /// The live items of the list, its tag filter applied.
    private static let list = """
        SELECT \(columns) FROM items WHERE family_id = \(Parameter.family) AND collection = \(Parameter.collection) \
        AND parent_id = \(Parameter.parent) AND NOT deleted \
        AND (\(Parameter.tags) IS NULL OR tag = ANY(\(Parameter.tags)::text[]))
        """

    /// The SQL of a paginated sync (protocol §4), with or without an anchor.
    static func syncSQL(anchored: Bool) -> String {
        let atOrAbove = anchored ? " AND (sort_ms, id) >= \(anchorBound)" : ""
        var sql = "WITH "
        if anchored { sql += anchor(sync: true) }
        sql += """
            changed_by_version AS MATERIALIZED (\(list) AND version > \(Parameter.since)\(atOrAbove) \
            ORDER BY version LIMIT \(changedReadLimit + 1)), \
            changed AS (SELECT * FROM (SELECT \(columns) FROM changed_by_version ORDER BY sort_ms DESC, id DESC \
            LIMIT \(Parameter.limit)) few WHERE (SELECT count(*) FROM changed_by_version) <= \(changedReadLimit) \
            UNION ALL SELECT * FROM (\(list) AND version + 0 > \(Parameter.since)\(atOrAbove) \
            ORDER BY sort_ms DESC, id DESC LIMIT \(Parameter.limit)) many \
            WHERE (SELECT count(*) FROM changed_by_version) > \(changedReadLimit)), \
            first_page AS MATERIALIZED (SELECT \(firstPageNeeded(anchored: anchored)) AS needed), \
            top AS (\(list) AND (SELECT needed FROM first_page) ORDER BY sort_ms DESC, id DESC LIMIT \(Parameter.limit))
            """
        if anchored {
            sql += ", below AS (\(list) AND (sort_ms, id) < \(anchorBound) ORDER BY sort_ms DESC, id DESC LIMIT 1)"
        }
        sql += ", bottom AS (\(list) ORDER BY sort_ms ASC, id ASC LIMIT 1)"
        let family = named(
            version: "version", sortMs: "horizon", firstPage: "(SELECT needed FROM first_page)", lineage: SpaceLineage.column("families"))
        sql += """
             SELECT \(family) \
            FROM families WHERE id = \(Parameter.family)
            """
        if anchored { sql += part(.anchor, from: "anchor") }
        // The changes' bodies only when the answer is made of them; the first page's within the budget.
        sql += part(.changed, from: "changed", body: "CASE WHEN (SELECT needed FROM first_page) THEN NULL ELSE body END")
        sql += part(.top, from: "top", body: budgeted("body", order: "sort_ms DESC, id DESC"))
        if anchored { sql += part(.below, from: "below") }
        sql += part(.bottom, from: "bottom")
        // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
        sql += """
             UNION ALL SELECT \(Part.gone.rawValue), NULL, version, id, NULL, NULL, NULL, NULL, NULL, NULL FROM items \
            WHERE family_id = \(Parameter.family) AND collection = \(Parameter.collection) AND parent_id = \(Parameter.parent) \
            AND version > \(Parameter.since) \
            AND (deleted OR (\(Parameter.tags) IS NOT NULL AND NOT coalesce(tag = ANY(\(Parameter.tags)::text[]), false)))
            """
        // The children of the answer's list: the first page when there is one, else the changes.
        let parents = "SELECT id, sort_ms FROM top UNION ALL SELECT id, sort_ms FROM changed WHERE NOT EXISTS (SELECT 1 FROM top)"
        return sql + children(of: parents) + order
    }

    /// The SQL of a page: the live items below the anchor (or the first ones), with their children.
    static func pageSQL(anchored: Bool) -> String {
        var sql = "WITH "
        if anchored { sql += anchor(sync: false) }
        sql += "top AS (\(list)"
        if anchored { sql += " AND (sort_ms, id) < \(anchorBound)" }
        sql += " ORDER BY sort_ms DESC, id DESC LIMIT \(Parameter.limit))"
        // The first row stands for "the statement answered" when there is no anchor to find.
        sql += " SELECT \(named(version: "NULL::int8", sortMs: "NULL::int8", firstPage: "NULL::bool"))"
        if anchored { sql += part(.anchor, from: "anchor") }
        return sql + part(.top, from: "top", body: budgeted("body", order: "sort_ms DESC, id DESC"))
            + children(of: "SELECT id, sort_ms FROM top") + order
    }

    /// `PageSyncRows.needsFirstPage` in SQL, a value of the statement (PostgreSQL tests it once, before it reads
    /// `top`): the date cannot be answered (`PageSyncRows.answerable`: no date, a date past the family's counter or
    /// before its purge horizon, an anchor unknown or moved since the date), or more items changed than fit.
    private static func firstPageNeeded(anchored: Bool) -> String {
        let since = Parameter.since
        var answerable = "coalesce((SELECT \(since) <= version AND \(since) >= horizon FROM families WHERE id = \(Parameter.family)), false)"
        if anchored { answerable += " AND coalesce((SELECT sort_version <= \(since) FROM anchor), false)" }
        // `changed` holds at most `limit + 1` rows (the parameter): all of them means more than the page holds. Their
        // bodies past the budget mean the same (`PageBytes`: a second body pushing the total past it).
        return """
            (NOT (\(answerable)) OR (SELECT count(*) FROM changed) >= \(Parameter.limit) \
            OR ((SELECT count(*) FROM changed) > 1 AND (SELECT sum(octet_length(body)) FROM changed) > \(Parameter.budget)))
            """
    }

    /// `anchor AS (…), `: the `lastId` row, live or tombstone.
    private static func anchor(sync: Bool) -> String {
        """
        anchor AS (SELECT \(columns) FROM items WHERE family_id = \(Parameter.family) AND collection = \(Parameter.collection) \
        AND parent_id = \(Parameter.parent) AND id = \(Parameter.anchor(sync: sync))), \

        """
    }

    /// ` UNION ALL` the rows of a part's expression, its body as `body` says.
    private static func part(_ part: Part, from name: String, body: String = "body") -> String {
        " UNION ALL SELECT \(part.rawValue), NULL, 0, id, version, deleted, \(body), sort_ms, sort_version, tag FROM \(name)"
    }

    /// `PageBytes` in SQL: the body while the running total of the bodies in `order` is within the budget, the first
    /// always, NULL after.
    private static func budgeted(_ body: String, order: String) -> String {
        """
        CASE WHEN sum(octet_length(\(body))) OVER (ORDER BY \(order) ROWS UNBOUNDED PRECEDING) <= \(Parameter.budget) \
        OR row_number() OVER (ORDER BY \(order)) = 1 THEN \(body) END
        """
    }

    /// ` UNION ALL` the newest `limit + 1` live children of each of the first `limit` parents the `parents` query names
    /// (`id`, `sort_ms`; a lateral read of `items_order` per parent), when a children collection is given: by parent,
    /// in the parents' order (`ord`), their bodies within the budget over that order.
    private static func children(of parents: String) -> String {
        let order = "c.ord, c.sort_ms DESC, c.id DESC"
        return """
             UNION ALL SELECT \(Part.child.rawValue), c.pid, c.ord, c.id, c.version, c.deleted, \(budgeted("c.body", order: order)), \
            c.sort_ms, c.sort_version, c.tag FROM (SELECT p.pid, p.ord, k.* FROM (SELECT id, ord FROM (SELECT id, \
            row_number() OVER (ORDER BY sort_ms DESC, id DESC) AS ord FROM (\(parents)) x) n WHERE ord < \(Parameter.limit)) \
            p(pid, ord) CROSS JOIN LATERAL (SELECT \(columns) FROM items WHERE family_id = \(Parameter.family) \
            AND collection = \(Parameter.childCollection) AND parent_id = p.pid AND NOT deleted \
            ORDER BY sort_ms DESC, id DESC LIMIT \(Parameter.childLimit)) k WHERE \(Parameter.childCollection) IS NOT NULL) c
            """
    }

    /// The first row, which names the columns of all (and makes the text ones collate as `items` does: "C"); a
    /// sync's says in `deleted` whether the answer is a fresh first page.
    private static func named(version: String, sortMs: String, firstPage: String, lineage: String = "NULL::text") -> String {
        """
        \(Part.family.rawValue) AS part, NULL::text COLLATE "C" AS pid, 0::int8 AS ord, NULL::text COLLATE "C" AS id, \
        \(version) AS version, \(firstPage) AS deleted, \(lineage) AS body, \(sortMs) AS sort_ms, NULL::int8 AS sort_version, \
        NULL::text AS tag
        """
    }

    /// Parts in order; in a part, `gone` by version, children by their parent's place, and items in the list's order.
    private static let order = " ORDER BY part, ord, pid, sort_ms DESC, id DESC"

    /// The values of a page (`sync` false) or a sync, in the order of their parameters.
    static func bindings(spaceID: String, query: PageQuery, sync: Bool, since: Int64?) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        bindings.append(spaceID)
        bindings.append(query.collection)
        bindings.append(query.parentID)
        bindings.append(query.tags)
        bindings.append(Int64(query.limit + 1))
        bindings.append(query.children?.collection)
        bindings.append(Int64((query.children?.limit ?? 0) + 1))
        bindings.append(Int64(query.byteBudget))
        if sync { bindings.append(since) }
        if let anchorID = query.anchorID { bindings.append(anchorID) }
        return bindings
    }
}

/// A page statement of `PreparedStatements`: its values and rows are those of every shape; only its SQL differs.
protocol PageStatement: PostgresPreparedStatement where Row == PostgresItemStatements.PartRow {
    /// True for a sync's statements, which take the date's version.
    static var isSync: Bool { get }
    var spaceID: String { get }
    var query: PageQuery { get }
    /// The date's version (nil: none); always nil for a page.
    var since: Int64? { get }
}

extension PageStatement {
    func makeBindings() throws -> PostgresBindings {
        PreparedPageStatements.bindings(spaceID: spaceID, query: query, sync: Self.isSync, since: since)
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresItemStatements.partRow(row) }
}

extension PreparedStatements {
    /// A paginated sync from the top of the list (no `lastId`).
    struct PageSync: PageStatement {
        static let name = "syncapi_page_sync"
        static let sql = PreparedPageStatements.syncSQL(anchored: false)
        static let isSync = true
        let spaceID: String
        let query: PageQuery
        let since: Int64?
    }

    /// A paginated sync of a client whose cached list ends at `lastId`.
    struct AnchoredPageSync: PageStatement {
        static let name = "syncapi_anchored_page_sync"
        static let sql = PreparedPageStatements.syncSQL(anchored: true)
        static let isSync = true
        let spaceID: String
        let query: PageQuery
        let since: Int64?
    }

    /// The first page of a list.
    struct Page: PageStatement {
        static let name = "syncapi_page"
        static let sql = PreparedPageStatements.pageSQL(anchored: false)
        static let isSync = false
        let spaceID: String
        let query: PageQuery
        var since: Int64? { nil }
    }

    /// The page below `lastId`.
    struct AnchoredPage: PageStatement {
        static let name = "syncapi_anchored_page"
        static let sql = PreparedPageStatements.pageSQL(anchored: true)
        static let isSync = false
        let spaceID: String
        let query: PageQuery
        var since: Int64? { nil }
    }
}
