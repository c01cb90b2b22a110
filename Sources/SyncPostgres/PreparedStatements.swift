import Logging
import PostgresNIO
import SyncAPI

/// The hot statements, prepared once per connection (parsed and planned once, then only bound and run): a delta, an
/// item read, a family lock and a token lookup run on nearly every request.
///
/// Prepared is not enough to be planned once: PostgreSQL plans a prepared statement again for every run while that
/// "custom" plan, made for the run's values, looks cheaper than the value-blind "generic" one, and a delta's
/// `version > $3` always looks cheaper with its value known. The deltas therefore read each value through a
/// sub-select (`(SELECT $1::text)`): no plan sees a value, so both estimate alike and PostgreSQL keeps the generic
/// plan from the sixth run on. Their shapes leave that plan one choice, the index `items_delta` on all four of its
/// columns (`PostgresPlanTests`; migration 007 puts the parent in it, so no other index looks cheaper to a plan that
/// cannot see how common the parent is). Planning a delta costs PostgreSQL more than running it.
enum PreparedStatements {
    /// The space's line (`SpaceLineage`) as one column of a statement over `families f`: NULL until a failover.
    static let lineage = SpaceLineage.column("f")

    /// A delta of one collection (a list's sync): the family's counter and horizon, and the rows changed after a
    /// position, in version order. Each value through a sub-select, so the generic plan is kept (see above).
    struct CollectionDelta: PostgresPreparedStatement {
        static let name = "syncapi_collection_delta"
        static let sql = """
            SELECT f.version, f.horizon, \(PreparedStatements.lineage), i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = (SELECT $2::text) AND i.parent_id = ''
              AND i.version > (SELECT $3::int8) AND ((SELECT $4::bool) OR NOT i.deleted)
            WHERE f.id = (SELECT $1::text)
            ORDER BY i.version
            """
        typealias Row = Delta.Row
        let spaceID: String
        let collection: String
        let after: Int64
        let includeDeleted: Bool

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(spaceID)
            bindings.append(collection)
            bindings.append(after)
            bindings.append(includeDeleted)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try Delta.decode(row) }
    }

    /// A delta of several collections (a bundle's sync) or of none (the counter alone): as `CollectionDelta`, with
    /// the collections as an array (with the parent in `items_delta`, its generic plan takes `= ANY` into the index
    /// condition).
    struct Delta: PostgresPreparedStatement {
        /// A fixed name: the default, `String(reflecting:)` of the type, is computed on every run.
        static let name = "syncapi_delta"
        static let sql = """
            SELECT f.version, f.horizon, \(PreparedStatements.lineage), i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY((SELECT $2::text[])::text[]) AND i.parent_id = ''
              AND i.version > (SELECT $3::int8) AND ((SELECT $4::bool) OR NOT i.deleted)
            WHERE f.id = (SELECT $1::text)
            ORDER BY i.version
            """
        typealias Row = (Int64, Int64, String?, String?, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)
        let spaceID: String
        let collections: [String]
        let after: Int64
        let includeDeleted: Bool

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(spaceID)
            bindings.append(collections)
            bindings.append(after)
            bindings.append(includeDeleted)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try Self.decode(row) }

        static func decode(_ row: PostgresRow) throws -> Row {
            var r = ColumnReader(row)
            return (
                try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
                try r.next(), try r.next(), try r.next()
            )
        }
    }

    /// The deltas of several requests, of any families, in one statement (`DeltaBatcher`): one row of the arrays per
    /// call and collection, each call's rows tagged by it, every family's counter and horizon on its calls' rows, a
    /// row of NULL items for a collection with no change, and no row at all for a family that does not exist. Each
    /// call reads its family by its key and its rows through `items_delta`, each in a lateral subquery kept one by
    /// `OFFSET 0`: joined as a whole, the generic plan hashes the whole `families` table, a cost that grows with the
    /// families.
    struct BatchedDeltas: PostgresPreparedStatement {
        static let name = "syncapi_batched_deltas"
        static let sql = """
            SELECT r.call, f.version, f.horizon, \(PreparedStatements.lineage), i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM unnest((SELECT $1::int8[]), (SELECT $2::text[]), (SELECT $3::text[]), (SELECT $4::int8[]), (SELECT $5::bool[]))
              AS r(call, family_id, collection, after, include_deleted)
            CROSS JOIN LATERAL (SELECT f.id, f.version, f.horizon, f.history, f.fork_from, f.fork_version FROM families f WHERE f.id = r.family_id OFFSET 0) f
            LEFT JOIN LATERAL (
              SELECT i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag FROM items i
              WHERE i.family_id = f.id AND i.collection = r.collection AND i.parent_id = ''
                AND i.version > r.after AND (r.include_deleted OR NOT i.deleted)
              OFFSET 0
            ) i ON true
            ORDER BY r.call, i.version
            """
        typealias Row = Deltas.Row
        var calls: [Int64] = []
        var spaceIDs: [String] = []
        var collections: [String] = []
        var after: [Int64] = []
        var includeDeleted: [Bool] = []

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(calls)
            bindings.append(spaceIDs)
            bindings.append(collections)
            bindings.append(after)
            bindings.append(includeDeleted)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try Deltas.decode(row) }
    }

    /// Several deltas of one family in one statement (a group's run of reads, `PostgresStore.prefetchingDeltas`):
    /// each changed row tagged by the call it answers, the family's counter and horizon on every row, and a row of
    /// NULL items for a collection with no change; at most `limit` rows. Each call reads the index `items_delta` in
    /// its own lateral subquery (its `LIMIT` keeps it one): joined as a whole, a large family's items are planned as a
    /// scan of the whole table.
    struct Deltas: PostgresPreparedStatement {
        static let name = "syncapi_deltas"
        static let sql = """
            SELECT r.call, f.version, f.horizon, \(PreparedStatements.lineage), i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            CROSS JOIN unnest((SELECT $2::int8[]), (SELECT $3::text[]), (SELECT $4::int8[]), (SELECT $5::bool[]))
              AS r(call, collection, after, include_deleted)
            LEFT JOIN LATERAL (
              SELECT i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag FROM items i
              WHERE i.family_id = f.id AND i.collection = r.collection AND i.parent_id = ''
                AND i.version > r.after AND (r.include_deleted OR NOT i.deleted)
              ORDER BY i.version
              LIMIT (SELECT $6::int8)
            ) i ON true
            WHERE f.id = (SELECT $1::text)
            ORDER BY r.call, i.version
            LIMIT (SELECT $6::int8)
            """
        typealias Row = (Int64, Int64, Int64, String?, String?, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)
        let spaceID: String
        let calls: [Int64]
        let collections: [String]
        let after: [Int64]
        let includeDeleted: [Bool]
        let limit: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(spaceID)
            bindings.append(calls)
            bindings.append(collections)
            bindings.append(after)
            bindings.append(includeDeleted)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try Self.decode(row) }

        static func decode(_ row: PostgresRow) throws -> Row {
            var r = ColumnReader(row)
            return (
                try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
                try r.next(), try r.next(), try r.next(), try r.next()
            )
        }
    }

    /// One item by its key, live or tombstone.
    struct Item: PostgresPreparedStatement {
        static let name = "syncapi_item"
        static let sql = """
            SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items
            WHERE family_id = $1 AND collection = $2 AND parent_id = $3 AND id = $4
            """
        typealias Row = StoredItem
        let spaceID: String
        let key: ItemKey

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(spaceID)
            bindings.append(key.collection)
            bindings.append(key.parentID)
            bindings.append(key.id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try PostgresItemStatements.storedItem(row) }
    }

    /// Locks the family row: every write of the family is ordered by it.
    struct LockFamily: PostgresPreparedStatement {
        static let name = "syncapi_lockFamily"
        static let sql =
            "SELECT version, horizon, live_items, stored_bytes, \(SpaceLineage.column("families")) FROM families WHERE id = $1 FOR UPDATE"
        typealias Row = (Int64, Int64, Int64, Int64, String?)
        let spaceID: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(spaceID)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// The account of an unexpired token hash, one row per membership in the order of joining (one row with no
    /// space when it has none).
    struct Session: PostgresPreparedStatement {
        static let name = "syncapi_session_spaces"
        static let sql = """
            SELECT t.account_id, a.family_id, t.expires_ms, m.space_id, m.role, m.since_version
            FROM tokens t JOIN accounts a ON a.id = t.account_id
            LEFT JOIN memberships m ON m.account_id = t.account_id
            WHERE t.hash = $1 AND t.expires_ms > $2 ORDER BY m.seq
            """
        typealias Row = (String, String, Int64, String?, String?, Int64?)
        let tokenHash: String
        let nowMs: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(tokenHash)
            bindings.append(nowMs)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

extension PostgresConnection {
    /// Runs a statement of `PreparedStatements`: prepared (named, once per connection) or, behind a pooler in
    /// transaction mode, as an unnamed statement with the same SQL and bindings.
    func run<Statement: PostgresPreparedStatement>(
        _ statement: Statement, prepared: Bool, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Statement.Row> {
        if prepared {
            // Refused at once on a closed connection, as `statement` does (`ClosedConnections.swift`).
            guard !isClosed else { throw ConnectionClosed() }
            return try await execute(statement, logger: logger)
        }
        let rows = try await self.statement(PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings()), logger: logger)
        return rows.map { try statement.decodeRow($0) }
    }
}
