import Foundation
import GRDB
import SyncCore

/// A paginated sync and a page, one statement each (`PageStatementSQL`, in SQLite's SQL), parsed once per connection:
/// the same statement as PostgreSQL's, so the rules of an answer (protocol §4) are written once.
extension SQLiteItemStatements {
    static let pageSyncSQL = PageStatementSQL.sqlite.sync(anchored: false)
    static let anchoredPageSyncSQL = PageStatementSQL.sqlite.sync(anchored: true)
    static let pageSQL = PageStatementSQL.sqlite.page(anchored: false)
    static let anchoredPageSQL = PageStatementSQL.sqlite.page(anchored: true)

    /// Everything a paginated sync decides from, in one statement; nil for an unknown family.
    package func pageSync(familyID: String, query: PageQuery, since: Int64?) throws -> PageSyncRows? {
        let sql = query.anchorID == nil ? Self.pageSyncSQL : Self.anchoredPageSyncSQL
        return try parts(sql, Self.arguments(familyID: familyID, query: query, sync: true, since: since)).syncRows(query)
    }

    /// The live items below the anchor with their children, in one statement; nil when the anchor never existed.
    package func page(familyID: String, query: PageQuery) throws -> PageRows? {
        let sql = query.anchorID == nil ? Self.pageSQL : Self.anchoredPageSQL
        return try parts(sql, Self.arguments(familyID: familyID, query: query, sync: false, since: nil)).pageRows(query)
    }

    private func parts(_ sql: String, _ arguments: StatementArguments) throws -> PageParts {
        var parts = PageParts()
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        while let row = try cursor.next() {
            parts.add(
                PagePart(rawValue: row[0]), parent: row[1],
                item: StoredItem(
                    id: row[3] ?? "", version: row[4] ?? 0, deleted: row[5] ?? false, body: row[6], sortMs: row[7], sortVersion: row[8],
                    tag: row[9]))
        }
        return parts
    }

    /// The values of a page (`sync` false) or a sync, in the order of their parameters (`?1`…); the tags as a JSON
    /// array (`json_each`).
    static func arguments(familyID: String, query: PageQuery, sync: Bool, since: Int64?) throws -> StatementArguments {
        var values: [(any DatabaseValueConvertible)?] = [
            familyID, query.collection, query.parentID,
            try query.tags.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) },
            Int64(query.limit + 1), query.children?.collection, Int64((query.children?.limit ?? 0) + 1), Int64(query.byteBudget),
        ]
        if sync { values.append(since) }
        if let anchorID = query.anchorID { values.append(anchorID) }
        return StatementArguments(values)
    }
}
