import Logging
import PostgresNIO
import SyncAPI

/// The item statements in PostgreSQL's SQL, on one leased connection; the hot ones are prepared (`PreparedStatements`).
package struct PostgresItemStatements: ItemStatements {
    package let conn: PostgresConnection
    package let logger: Logger
    /// Named prepared statements (off behind a transaction pooler: `PostgresStore.usesPreparedStatements`).
    package var prepared = true

    /// The columns every item query reads, in `StoredItem` order.
    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"

    /// The item in the next seven columns (`columns`).
    static func storedItem(_ r: inout ColumnReader) throws -> StoredItem {
        StoredItem(
            id: try r.next(), version: try r.next(), deleted: try r.next(), body: try r.next(), sortMs: try r.next(),
            sortVersion: try r.next(), tag: try r.next())
    }

    /// The item of a row of exactly `columns`.
    static func storedItem(_ row: PostgresRow) throws -> StoredItem {
        var r = ColumnReader(row)
        return try storedItem(&r)
    }

    package func family(_ spaceID: String, lock: Bool) async throws -> FamilyCounter? {
        if lock {
            // Prepared: every write starts here.
            for try await (version, horizon, items, bytes, lineage) in try await conn.run(
                PreparedStatements.LockFamily(spaceID: spaceID), prepared: prepared, logger: logger)
            {
                return FamilyCounter(
                    version: version, horizon: horizon, usage: FamilyUsage(items: items, bytes: bytes),
                    lineage: SpaceLineage.read(lineage))
            }
            return nil
        }
        let rows = try await conn.statement(
            "SELECT version, horizon, \(unescaped: SpaceLineage.column("families")) FROM families WHERE id = \(spaceID)", logger: logger)
        for try await (version, horizon, lineage) in rows.decode((Int64, Int64, String?).self) {
            return FamilyCounter(version: version, horizon: horizon, lineage: SpaceLineage.read(lineage))
        }
        return nil
    }

    package func item(spaceID: String, key: ItemKey) async throws -> StoredItem? {
        for try await item in try await conn.run(PreparedStatements.Item(spaceID: spaceID, key: key), prepared: prepared, logger: logger) {
            return item
        }
        return nil
    }

    /// A bump of the family's counter on the history the write happens on (`h`, `syncapi_history()`): the first move
    /// on a new history records the one it came from and the value it had then (`SpaceLineage`).
    static let bumpSet = """
        version = version + 1, fork_from = CASE WHEN history = h.id THEN fork_from ELSE history END, \
        fork_version = CASE WHEN history = h.id THEN fork_version ELSE version END, history = h.id
        """

    /// A write's notice: `<family id>:<version>`, then `:<history>` off the first history.
    static let notice = "families.id || ':' || families.version || CASE WHEN families.history = '' THEN '' ELSE ':' || families.history END"

    package func bump(spaceID: String) async throws -> Int64 {
        let rows = try await conn.statement(
            """
            WITH h AS (SELECT syncapi_history() AS id), bumped AS (
              UPDATE families SET \(unescaped: Self.bumpSet) FROM h WHERE families.id = \(spaceID)
              RETURNING families.version, pg_notify(\(PostgresChangeListener.channel), \(unescaped: Self.notice))
            )
            SELECT version FROM bumped
            """, logger: logger)
        for try await version in rows.decode(Int64.self) { return version }
        throw SyncError.unauthorized
    }

    package func touchMedia(spaceID: String, hashes: [String], nowMs: Int64) async throws {
        try await conn.statement(
            """
            UPDATE media SET referenced_ms = GREATEST(referenced_ms, \(nowMs))
            WHERE family_id = \(spaceID) AND sha256 = ANY(\(hashes)::text[])
            """, logger: logger)
    }

    /// With no `version` yet, bumps the family counter (and notifies its channel) in the same statement as the insert.
    package func store(_ row: RowWrite, spaceID: String, version: Int64?, nowMs: Int64) async throws -> StoredItem {
        let key = row.key
        let deleted = row.body == nil
        let rows = try await conn.statement(
            """
            WITH h AS (SELECT syncapi_history() AS id), bumped AS (
              UPDATE families SET \(unescaped: Self.bumpSet) FROM h WHERE families.id = \(spaceID) AND \(version == nil)
              RETURNING families.version, pg_notify(\(PostgresChangeListener.channel), \(unescaped: Self.notice))
            ), v AS (
              SELECT version FROM bumped UNION ALL SELECT \(version ?? 0)::BIGINT WHERE \(version != nil)
            )
            INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
            SELECT \(spaceID), \(key.collection), \(key.parentID), \(key.id), v.version, \(deleted), \(row.body), \(nowMs),
                   \(row.sortMs), v.version, \(row.tag) FROM v
            ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
              version = EXCLUDED.version, deleted = EXCLUDED.deleted, body = EXCLUDED.body, modified_ms = EXCLUDED.modified_ms,
              sort_ms = EXCLUDED.sort_ms, tag = EXCLUDED.tag,
              sort_version = CASE WHEN \(row.sortMoved) OR items.sort_version IS NULL THEN EXCLUDED.version ELSE items.sort_version END
            RETURNING version, sort_version
            """, logger: logger)
        var stored: StoredItem?
        for try await (v, sortVersion) in rows.decode((Int64, Int64?).self) {
            stored = StoredItem(
                id: key.id, version: v, deleted: deleted, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion, tag: row.tag)
        }
        guard let stored else { throw SyncError.unauthorized }
        if let children = row.deleteChildren {
            // The media the children name lasts a retention from now, as a deleted post's does.
            var hashes = Set<String>()
            for try await body in try await conn.statement(
                """
                SELECT body FROM items WHERE family_id = \(spaceID) AND collection = \(children) AND parent_id = \(key.id)
                AND NOT deleted AND strpos(body, \(MediaURL.prefix)) > 0
                """, logger: logger
            ).decode(String.self) {
                hashes.formUnion(MediaURL.hashes(in: [body]))
            }
            if !hashes.isEmpty { try await touchMedia(spaceID: spaceID, hashes: hashes.sorted(), nowMs: nowMs) }
            try await conn.statement(
                """
                UPDATE items SET deleted = true, body = NULL, version = \(stored.version), modified_ms = \(nowMs)
                WHERE family_id = \(spaceID) AND collection = \(children) AND parent_id = \(key.id) AND NOT deleted
                """, logger: logger)
        }
        return stored
    }

    /// One prepared statement: the counter and the rows come from the same snapshot.
    package func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta? {
        let (after, includeDeleted) = (since ?? 0, since != nil)
        let rows =
            if collections.count == 1 {
                try await conn.run(
                    PreparedStatements.CollectionDelta(
                        spaceID: spaceID, collection: collections[0], after: after, includeDeleted: includeDeleted),
                    prepared: prepared, logger: logger)
            } else {
                try await conn.run(
                    PreparedStatements.Delta(spaceID: spaceID, collections: collections, after: after, includeDeleted: includeDeleted),
                    prepared: prepared, logger: logger)
            }
        var counter: FamilyCounter?
        var items = DeltaRows()
        for try await (fv, fh, lineage, collection, id, iv, deleted, body, sortMs, sortVersion, tag) in rows {
            counter = FamilyCounter(version: fv, horizon: fh, lineage: SpaceLineage.read(lineage))
            if let collection, let id, let iv, let deleted {
                items.append(
                    StoredItem(id: id, version: iv, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag),
                    to: collection)
            }
        }
        guard let counter else { return nil }
        return items.delta(version: counter.version, horizon: counter.horizon, lineage: counter.lineage)
    }

    /// `id` is `COLLATE "C"`: its order is the byte order. Only `modified` leaves the database, not the body.
    package func verifyRows(spaceID: String, collection: String, _ each: @Sendable (VerifyRow) -> Void) async throws {
        let rows = try await conn.statement(
            """
            SELECT id, body::json->>'modified', sort_ms, tag FROM items
            WHERE family_id = \(spaceID) AND collection = \(collection) AND parent_id = '' AND NOT deleted ORDER BY id
            """, logger: logger)
        for try await (id, modified, sortMs, tag) in rows.decode((String, String?, Int64?, String?).self) {
            each(VerifyRow(collection: collection, id: id, modified: modified, sortMs: sortMs, tag: tag))
        }
    }

    /// Served by the index `items_order` (family, collection, parent, sort key, id).
    /// (The shared orchestration's reads, which PostgreSQL answers in one statement each: `PostgresPageStatements`.)
    package func liveItems(
        _ query: PageQuery, spaceID: String, changedAfter: Int64?, bound: AnchorBound?, oldestFirst: Bool, limit: Int, budget: Int?
    ) async throws -> [StoredItem] {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 384, interpolationCount: 9)
        sql.appendLiteral("SELECT \(Self.columns), octet_length(body) FROM items WHERE family_id = ")
        sql.appendInterpolation(spaceID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(query.collection)
        sql.appendLiteral(" AND parent_id = ")
        sql.appendInterpolation(query.parentID)
        sql.appendLiteral(" AND NOT deleted AND (")
        sql.appendInterpolation(query.tags == nil)
        sql.appendLiteral(" OR tag = ANY(")
        sql.appendInterpolation(query.tags ?? [])
        sql.appendLiteral("))")
        if let changedAfter {
            sql.appendLiteral(" AND version > ")
            sql.appendInterpolation(changedAfter)
        }
        if let bound {
            let (op, anchor) =
                switch bound {
                case .atOrAbove(let anchor): (">=", anchor)
                case .below(let anchor): ("<", anchor)
                }
            sql.appendLiteral(" AND (sort_ms, id) \(op) (")
            sql.appendInterpolation(anchor.sortMs ?? 0)
            sql.appendLiteral(", ")
            sql.appendInterpolation(anchor.id)
            sql.appendLiteral(")")
        }
        sql.appendLiteral(oldestFirst ? " ORDER BY sort_ms ASC, id ASC LIMIT " : " ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(limit)
        var out: [StoredItem] = []
        var bytes = budget.map(PageBytes.init)
        for try await row in try await conn.statement(PostgresQuery(stringInterpolation: sql), logger: logger) {
            out.append(try Self.pageItem(row, &bytes))
        }
        return out
    }

    /// A row of `columns` and the body's size, its body withheld when it does not fit `bytes`.
    private static func pageItem(_ row: PostgresRow, _ bytes: inout PageBytes?) throws -> StoredItem {
        var r = ColumnReader(row)
        let item = try storedItem(&r)
        let size: Int32 = try r.next()
        return bytes?.keep(Int(size)) ?? true ? item : item.withheld
    }

    package func goneIDs(_ query: PageQuery, spaceID: String, since: Int64) async throws -> [String] {
        var ids: [String] = []
        for try await id in try await conn.statement(
            """
            SELECT id FROM items WHERE family_id = \(spaceID) AND collection = \(query.collection)
            AND parent_id = \(query.parentID) AND version > \(since)
            AND (deleted OR (\(query.tags != nil) AND NOT coalesce(tag = ANY(\(query.tags ?? [])), false)))
            ORDER BY version
            """, logger: logger
        ).decode(String.self) { ids.append(id) }
        return ids
    }

    /// One statement for every parent (a lateral join per parent on `items_order`), in the parents' order.
    package func children(
        _ children: ChildrenQuery, spaceID: String, of parentIDs: [String], budget: Int
    ) async throws -> [String: [StoredItem]] {
        var out: [String: [StoredItem]] = Dictionary(uniqueKeysWithValues: parentIDs.map { ($0, []) })
        var bytes: PageBytes? = PageBytes(budget: budget)
        let rows = try await conn.statement(
            """
            SELECT p.pid, c.id, c.version, c.deleted, c.body, c.sort_ms, c.sort_version, c.tag, octet_length(c.body)
            FROM unnest(\(parentIDs)::text[]) WITH ORDINALITY AS p(pid, ord)
            CROSS JOIN LATERAL (
              SELECT \(unescaped: Self.columns) FROM items
              WHERE family_id = \(spaceID) AND collection = \(children.collection) AND parent_id = p.pid COLLATE "C" AND NOT deleted
              ORDER BY sort_ms DESC, id DESC LIMIT \(children.limit)
            ) c
            ORDER BY p.ord, c.sort_ms DESC, c.id DESC
            """, logger: logger)
        for try await row in rows {
            var r = ColumnReader(row)
            let pid: String = try r.next()
            let item = try Self.storedItem(&r)
            let size: Int32 = try r.next()
            out[pid, default: []].append(bytes?.keep(Int(size)) ?? true ? item : item.withheld)
        }
        return out
    }
}
