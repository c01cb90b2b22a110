import Logging
import PostgresNIO

/// The hot statements, prepared once per connection (parsed and planned once, then only bound and run): a delta, an
/// item read, a family lock and a token lookup run on nearly every request (issue 9; design notes prepared
/// statements at about 15% faster than unnamed ones).
enum PreparedStatements {
    /// One statement for a delta: the family's counter and horizon, and the rows changed after a position.
    struct Delta: PostgresPreparedStatement {
        /// A fixed name: the default, `String(reflecting:)` of the type, was computed on every run (issue 19 profile).
        static let name = "syncapi_delta"
        static let sql = """
            SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY($2) AND i.parent_id = ''
              AND i.version > $3 AND ($4 OR NOT i.deleted)
            WHERE f.id = $1
            ORDER BY i.version
            """
        typealias Row = (Int64, Int64, String?, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)
        let familyID: String
        let collections: [String]
        let after: Int64
        let includeDeleted: Bool

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(familyID)
            bindings.append(collections)
            bindings.append(after)
            bindings.append(includeDeleted)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            var r = ColumnReader(row)
            return (
                try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
                try r.next(), try r.next()
            )
        }
    }

    /// Several deltas of one family in one statement (a group's run of reads, `PostgresStore.prefetchingDeltas`):
    /// each changed row tagged by the call it answers, the family's counter and horizon on every row, and a row of
    /// NULL items for a collection with no change; at most `limit` rows.
    struct Deltas: PostgresPreparedStatement {
        static let name = "syncapi_deltas"
        static let sql = """
            SELECT r.call, f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            CROSS JOIN unnest($2::int8[], $3::text[], $4::int8[], $5::bool[]) AS r(call, collection, after, include_deleted)
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = r.collection AND i.parent_id = ''
              AND i.version > r.after AND (r.include_deleted OR NOT i.deleted)
            WHERE f.id = $1
            ORDER BY r.call, i.version
            LIMIT $6
            """
        typealias Row = (Int64, Int64, Int64, String?, String?, Int64?, Bool?, String?, Int64?, Int64?, String?)
        let familyID: String
        let calls: [Int64]
        let collections: [String]
        let after: [Int64]
        let includeDeleted: [Bool]
        let limit: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(familyID)
            bindings.append(calls)
            bindings.append(collections)
            bindings.append(after)
            bindings.append(includeDeleted)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            var r = ColumnReader(row)
            return (
                try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(), try r.next(),
                try r.next(), try r.next(), try r.next()
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
        let familyID: String
        let key: ItemKey

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(familyID)
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
        static let sql = "SELECT version, horizon, live_items, stored_bytes FROM families WHERE id = $1 FOR UPDATE"
        typealias Row = (Int64, Int64, Int64, Int64)
        let familyID: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(familyID)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// The session of an unexpired token hash.
    struct Session: PostgresPreparedStatement {
        static let name = "syncapi_session"
        static let sql = "SELECT account_id, family_id, expires_ms FROM tokens WHERE hash = $1 AND expires_ms > $2"
        typealias Row = (String, String, Int64)
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
        if prepared { return try await execute(statement, logger: logger) }
        let rows = try await query(PostgresQuery(unsafeSQL: Statement.sql, binds: try statement.makeBindings()), logger: logger)
        return rows.map { try statement.decodeRow($0) }
    }
}
