import PostgresNIO
import SyncAPI

extension PreparedStatements {
    /// Every live row's body of a full list, oldest change first, with the family's counter on every row (a family
    /// with no item gives one row of NULL body): one statement, so the counter and the rows read one snapshot. Each
    /// value through a sub-select, so the plan is made once per connection (planning it on every run would be a large
    /// part of PostgreSQL's time for it); its one plan reads the family's list by an index (`items_delta` or
    /// `items_order`, as the statistics make it cheaper) and sorts it, as an unnamed statement's plans do.
    struct LiveRows: PostgresPreparedStatement {
        static let name = "syncapi_live_rows"
        static let sql = """
            SELECT f.version, \(PreparedStatements.lineage), i.body
            FROM families f
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = (SELECT $2::text) AND i.parent_id = '' AND NOT i.deleted
            WHERE f.id = (SELECT $1::text)
            ORDER BY i.version, i.id
            """
        typealias Row = (Int64, String?, ByteBuffer?)
        let spaceID: String
        let collection: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(spaceID)
            bindings.append(collection)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            var columns = ColumnReader(row)
            return (try columns.next(), try columns.next(), try columns.next())
        }
    }

    /// Every live row's body of a full list, oldest change first, on a snapshot whose counter is read already (a
    /// group's run of reads).
    struct SnapshotLiveRows: PostgresPreparedStatement {
        static let name = "syncapi_snapshot_live_rows"
        static let sql = """
            SELECT body FROM items
            WHERE family_id = (SELECT $1::text) AND collection = (SELECT $2::text) AND parent_id = '' AND NOT deleted
            ORDER BY version, id
            """
        typealias Row = ByteBuffer?
        let spaceID: String
        let collection: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(spaceID)
            bindings.append(collection)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            var columns = ColumnReader(row)
            return try columns.next()
        }
    }
}
