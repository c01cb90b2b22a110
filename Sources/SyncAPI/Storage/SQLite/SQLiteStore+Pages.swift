import Foundation
import GRDB

/// Paginated lists in SQLite: one read transaction per answer, index `items_order`.
extension SQLiteStore {

    /// `AND tag IN (…)` for a filter, with its arguments.
    static func tagFilter(_ tags: [String]?) -> (sql: String, arguments: StatementArguments) {
        guard let tags else { return ("", []) }
        return (" AND tag IN (\(tags.map { _ in "?" }.joined(separator: ",")))", StatementArguments(tags))
    }

    static func liveList(_ query: PageQuery, familyID: String) -> (sql: String, arguments: StatementArguments) {
        let filter = tagFilter(query.tags)
        return (
            "FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted" + filter.sql,
            [familyID, query.collection, query.parentID] + filter.arguments
        )
    }

    private static let order = " ORDER BY sort_ms DESC, id DESC"

    static func children(_ query: PageQuery, familyID: String, of parents: [StoredItem], db: Database) throws -> [String: [StoredItem]] {
        guard let children = query.children else { return [:] }
        var out: [String: [StoredItem]] = [:]
        for parent in parents where out[parent.id] == nil {
            out[parent.id] = try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT \(columns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                    ORDER BY sort_ms DESC, id DESC LIMIT ?
                    """,
                arguments: [familyID, children.collection, parent.id, children.limit + 1]
            ).map(storedItem)
        }
        return out
    }

    public func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await read { db in
            guard let family = try Row.fetchOne(cached: db, sql: "SELECT version, horizon FROM families WHERE id = ?", arguments: [familyID]) else {
                throw SyncError.unauthorized
            }
            let list = Self.liveList(query, familyID: familyID)
            let anchor = try query.anchorID.flatMap {
                try Self.fetchItem(familyID: familyID, key: ItemKey(collection: query.collection, parentID: query.parentID, id: $0), db: db)
            }
            var changed: [StoredItem] = []
            if let since, query.anchorID == nil || anchor != nil {
                var sql = "SELECT \(Self.columns) " + list.sql + " AND version > ?"
                var arguments = list.arguments + [since]
                if let anchor {
                    sql += " AND (sort_ms, id) >= (?, ?)"
                    arguments += [anchor.sortMs, anchor.id]
                }
                changed = try Row.fetchAll(cached: db, sql: sql + Self.order + " LIMIT ?", arguments: arguments + [query.limit + 1]).map(
                    Self.storedItem)
            }
            let top = try Row.fetchAll(
                cached: db, sql: "SELECT \(Self.columns) " + list.sql + Self.order + " LIMIT ?", arguments: list.arguments + [query.limit + 1]
            ).map(Self.storedItem)
            var belowAnchor = false
            if let anchor {
                belowAnchor =
                    try Row.fetchOne(
                        cached: db, sql: "SELECT 1 " + list.sql + " AND (sort_ms, id) < (?, ?) LIMIT 1",
                        arguments: list.arguments + [anchor.sortMs, anchor.id])
                    != nil
            }
            let bottom = try Row.fetchOne(
                cached: db, sql: "SELECT \(Self.columns) " + list.sql + " ORDER BY sort_ms ASC, id ASC LIMIT 1", arguments: list.arguments
            ).map(Self.storedItem)
            // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
            var deleted: [String] = []
            if let since {
                let outside = query.tags.map { " OR tag IS NULL OR tag NOT IN (\($0.map { _ in "?" }.joined(separator: ",")))" } ?? ""
                deleted = try String.fetchAll(
                    cached: db,
                    sql: "SELECT id FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND version > ? AND (deleted"
                        + outside + ") ORDER BY version",
                    arguments: [familyID, query.collection, query.parentID, since] + StatementArguments(query.tags ?? []))
            }
            return PageSyncRows(
                version: family[0], horizon: family[1], anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
                bottom: bottom, deleted: deleted,
                children: try Self.children(query, familyID: familyID, of: changed + top, db: db))
        }
    }

    public func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        try await read { db in
            let list = Self.liveList(query, familyID: familyID)
            var sql = "SELECT \(Self.columns) " + list.sql
            var arguments = list.arguments
            if let anchorID = query.anchorID {
                let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                guard let anchor = try Self.fetchItem(familyID: familyID, key: key, db: db) else { return nil }
                sql += " AND (sort_ms, id) < (?, ?)"
                arguments += [anchor.sortMs, anchor.id]
            }
            let items = try Row.fetchAll(cached: db, sql: sql + Self.order + " LIMIT ?", arguments: arguments + [query.limit + 1]).map(
                Self.storedItem)
            return PageRows(items: items, children: try Self.children(query, familyID: familyID, of: items, db: db))
        }
    }
}

/// Prepared statements cached per connection: SQLite parses each distinct SQL text once, not at every call.
extension Database {
    func executeCached(sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

extension Row {
    static func fetchAll(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }

    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension Int64 {
    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> Int64? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension String {
    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> String? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    static func fetchAll(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> [String] {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }
}
