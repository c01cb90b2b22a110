import PostgresNIO

/// Reads a row's columns in order, each as its own concrete type, for the statements that return many rows.
///
/// PostgresNIO's `decode((A, B, …).self)` decodes through a parameter pack that is not specialized in this module:
/// every row built its tuple's type metadata in the Swift runtime again (a profile of full lists on PostgreSQL, issue
/// 19: about 13 % of the server's samples in `swift_getTupleTypeMetadata` and the generic metadata caches).
struct ColumnReader {
    /// The row has fewer columns than the statement's reader asked for (a statement and its reader disagree).
    struct MissingColumn: Error {}

    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) { cells = row.makeIterator() }

    /// The next column, decoded as `T`.
    mutating func next<T: PostgresDecodable>(_: T.Type = T.self) throws -> T {
        guard let cell = cells.next() else { throw MissingColumn() }
        return try cell.decode(T.self)
    }
}
