import PostgresNIO
import SyncCore

/// A paginated sync and a page as prepared statements (`PageStatementSQL`, in PostgreSQL's SQL), planned once per
/// connection like the deltas: planning a page statement again on every run would be more than half of PostgreSQL's
/// time for it.
enum PreparedPageStatements {
    /// The values of a page (`sync` false) or a sync, in the order of their parameters.
    static func bindings(familyID: String, query: PageQuery, sync: Bool, since: Int64?) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        bindings.append(familyID)
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
    var familyID: String { get }
    var query: PageQuery { get }
    /// The date's version (nil: none); always nil for a page.
    var since: Int64? { get }
}

extension PageStatement {
    func makeBindings() throws -> PostgresBindings {
        PreparedPageStatements.bindings(familyID: familyID, query: query, sync: Self.isSync, since: since)
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresItemStatements.partRow(row) }
}

extension PreparedStatements {
    /// A paginated sync from the top of the list (no `lastId`).
    struct PageSync: PageStatement {
        static let name = "syncapi_page_sync"
        static let sql = PageStatementSQL.postgres.sync(anchored: false)
        static let isSync = true
        let familyID: String
        let query: PageQuery
        let since: Int64?
    }

    /// A paginated sync of a client whose cached list ends at `lastId`.
    struct AnchoredPageSync: PageStatement {
        static let name = "syncapi_anchored_page_sync"
        static let sql = PageStatementSQL.postgres.sync(anchored: true)
        static let isSync = true
        let familyID: String
        let query: PageQuery
        let since: Int64?
    }

    /// The first page of a list.
    struct Page: PageStatement {
        static let name = "syncapi_page"
        static let sql = PageStatementSQL.postgres.page(anchored: false)
        static let isSync = false
        let familyID: String
        let query: PageQuery
        var since: Int64? { nil }
    }

    /// The page below `lastId`.
    struct AnchoredPage: PageStatement {
        static let name = "syncapi_anchored_page"
        static let sql = PageStatementSQL.postgres.page(anchored: true)
        static let isSync = false
        let familyID: String
        let query: PageQuery
        var since: Int64? { nil }
    }
}
