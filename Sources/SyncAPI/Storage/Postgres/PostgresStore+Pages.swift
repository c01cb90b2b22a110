import Foundation
import Logging
import PostgresNIO

/// Paginated lists in PostgreSQL: one REPEATABLE READ snapshot per answer, index `items_order`.
extension PostgresStore {

    /// `SELECT … FROM` the live items of the page's list, with the tag filter; callers append their conditions.
    static func liveList(_ query: PageQuery, familyID: String) -> PostgresQuery.StringInterpolation {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 256, interpolationCount: 5)
        sql.appendLiteral("SELECT \(columns) FROM items WHERE family_id = ")
        sql.appendInterpolation(familyID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(query.collection)
        sql.appendLiteral(" AND parent_id = ")
        sql.appendInterpolation(query.parentID)
        sql.appendLiteral(" AND NOT deleted AND (")
        sql.appendInterpolation(query.tags == nil)
        sql.appendLiteral(" OR tag = ANY(")
        sql.appendInterpolation(query.tags ?? [])
        sql.appendLiteral("))")
        return sql
    }

    /// Appends `AND (sort_ms, id) <op> (anchor)`.
    static func compare(_ sql: inout PostgresQuery.StringInterpolation, _ op: String, _ anchor: StoredItem) {
        sql.appendLiteral(" AND (sort_ms, id) \(op) (")
        sql.appendInterpolation(anchor.sortMs ?? 0)
        sql.appendLiteral(", ")
        sql.appendInterpolation(anchor.id)
        sql.appendLiteral(")")
    }

    /// Appends the page order and a limit.
    static func ordered(_ sql: inout PostgresQuery.StringInterpolation, ascending: Bool = false, limit: Int) -> PostgresQuery {
        sql.appendLiteral(ascending ? " ORDER BY sort_ms ASC, id ASC LIMIT " : " ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(limit)
        return PostgresQuery(stringInterpolation: sql)
    }

    func children(
        _ query: PageQuery, familyID: String, of parents: [StoredItem], on conn: PostgresConnection
    ) async throws
        -> [String: [StoredItem]]
    {
        guard let children = query.children, !parents.isEmpty else { return [:] }
        var ids: [String] = []
        for parent in parents where !ids.contains(parent.id) { ids.append(parent.id) }
        var out: [String: [StoredItem]] = Dictionary(uniqueKeysWithValues: ids.map { ($0, []) })
        let rows = try await conn.query(
            """
            SELECT p.pid, c.id, c.version, c.deleted, c.body, c.sort_ms, c.sort_version, c.tag
            FROM unnest(\(ids)::text[]) AS p(pid)
            CROSS JOIN LATERAL (
              SELECT \(unescaped: Self.columns) FROM items
              WHERE family_id = \(familyID) AND collection = \(children.collection) AND parent_id = p.pid COLLATE "C" AND NOT deleted
              ORDER BY sort_ms DESC, id DESC LIMIT \(children.limit + 1)
            ) c
            ORDER BY p.pid, c.sort_ms DESC, c.id DESC
            """, logger: logger)
        for try await (pid, id, version, deleted, body, sortMs, sortVersion, tag) in rows.decode(
            (String, String, Int64, Bool, String?, Int64?, Int64?, String?).self)
        {
            out[pid, default: []].append(Self.storedItem((id, version, deleted, body, sortMs, sortVersion, tag)))
        }
        return out
    }

    public func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await guarded {
            try await snapshotRead { conn in
                var family: (Int64, Int64)?
                for try await row in try await conn.query(
                    "SELECT version, horizon FROM families WHERE id = \(familyID)", logger: logger
                ).decode((Int64, Int64).self) { family = row }
                guard let family else { throw SyncError.unauthorized }
                var anchor: StoredItem?
                if let anchorID = query.anchorID {
                    anchor = try await fetchItem(
                        familyID: familyID, key: ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID), on: conn)
                }
                let limit = query.limit + 1
                var changed: [StoredItem] = []
                if let since, query.anchorID == nil || anchor != nil {
                    var sql = Self.liveList(query, familyID: familyID)
                    sql.appendLiteral(" AND version > ")
                    sql.appendInterpolation(since)
                    if let anchor { Self.compare(&sql, ">=", anchor) }
                    changed = try await Self.items(try await conn.query(Self.ordered(&sql, limit: limit), logger: logger))
                }
                var topSQL = Self.liveList(query, familyID: familyID)
                let top = try await Self.items(try await conn.query(Self.ordered(&topSQL, limit: limit), logger: logger))
                var belowAnchor = false
                if let anchor {
                    var sql = Self.liveList(query, familyID: familyID)
                    Self.compare(&sql, "<", anchor)
                    belowAnchor = try await !Self.items(try await conn.query(Self.ordered(&sql, limit: 1), logger: logger)).isEmpty
                }
                var bottomSQL = Self.liveList(query, familyID: familyID)
                let bottom = try await Self.items(
                    try await conn.query(Self.ordered(&bottomSQL, ascending: true, limit: 1), logger: logger)
                ).first
                // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
                var deleted: [String] = []
                if let since {
                    for try await id in try await conn.query(
                        """
                        SELECT id FROM items WHERE family_id = \(familyID) AND collection = \(query.collection)
                        AND parent_id = \(query.parentID) AND version > \(since)
                        AND (deleted OR (\(query.tags != nil) AND NOT coalesce(tag = ANY(\(query.tags ?? [])), false)))
                        ORDER BY version
                        """, logger: logger
                    ).decode(String.self) { deleted.append(id) }
                }
                return PageSyncRows(
                    version: family.0, horizon: family.1, anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
                    bottom: bottom, deleted: deleted,
                    children: try await children(query, familyID: familyID, of: changed + top, on: conn))
            }
        }
    }

    public func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        try await guarded {
            try await snapshotRead { conn in
                var sql = Self.liveList(query, familyID: familyID)
                if let anchorID = query.anchorID {
                    let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                    guard let anchor = try await fetchItem(familyID: familyID, key: key, on: conn) else { return nil }
                    Self.compare(&sql, "<", anchor)
                }
                let items = try await Self.items(try await conn.query(Self.ordered(&sql, limit: query.limit + 1), logger: logger))
                return PageRows(items: items, children: try await children(query, familyID: familyID, of: items, on: conn))
            }
        }
    }
}
