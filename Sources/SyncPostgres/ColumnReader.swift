import NIOCore
import PostgresNIO
import SyncAPI

/// Reads a row's columns in order, each as its own concrete type, for the statements that return many rows.
///
/// PostgresNIO's `decode((A, B, …).self)` decodes through a parameter pack that is not specialized in this module:
/// every row builds its tuple's type metadata in the Swift runtime again (`swift_getTupleTypeMetadata` and the generic
/// metadata caches, a large part of a full list's cost on PostgreSQL). The types the statements read most (`int8`,
/// `int4`, `bool` and `text` in binary format) are read straight from the cell's bytes; any other type or format goes
/// through PostgresNIO's decoding, which checks it.
struct ColumnReader {
    /// The row has fewer columns than the statement's reader asked for (a statement and its reader disagree).
    struct MissingColumn: Error {}

    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) { cells = row.makeIterator() }

    private mutating func cell() throws -> PostgresCell {
        guard let cell = cells.next() else { throw MissingColumn() }
        return cell
    }

    /// The next column, decoded as `T`.
    mutating func next<T: PostgresDecodable>(_: T.Type = T.self) throws -> T {
        try cell().decode(T.self)
    }

    mutating func next(_: Int64.Type = Int64.self) throws -> Int64 {
        let cell = try cell()
        return try Self.int64(cell) ?? cell.decode(Int64.self)
    }

    mutating func next(_: Int64?.Type = Int64?.self) throws -> Int64? {
        let cell = try cell()
        guard cell.bytes != nil else { return nil }
        return try Self.int64(cell) ?? cell.decode(Int64.self)
    }

    mutating func next(_: Int32.Type = Int32.self) throws -> Int32 {
        let cell = try cell()
        if cell.format == .binary, cell.dataType == .int4, let bytes = cell.bytes, bytes.readableBytes == 4,
            let value = bytes.getInteger(at: bytes.readerIndex, as: Int32.self)
        {
            return value
        }
        return try cell.decode(Int32.self)
    }

    mutating func next(_: Bool?.Type = Bool?.self) throws -> Bool? {
        let cell = try cell()
        guard let bytes = cell.bytes else { return nil }
        if cell.format == .binary, cell.dataType == .bool, bytes.readableBytes == 1,
            let value = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self)
        {
            return value != 0
        }
        return try cell.decode(Bool.self)
    }

    mutating func next(_: String?.Type = String?.self) throws -> String? {
        let cell = try cell()
        guard let bytes = cell.bytes else { return nil }
        if cell.format == .binary, cell.dataType == .text || cell.dataType == .varchar { return String(buffer: bytes) }
        return try cell.decode(String.self)
    }

    mutating func next(_: String.Type = String.self) throws -> String {
        let cell = try cell()
        if cell.format == .binary, cell.dataType == .text || cell.dataType == .varchar, let bytes = cell.bytes {
            return String(buffer: bytes)
        }
        return try cell.decode(String.self)
    }

    private static func int64(_ cell: PostgresCell) -> Int64? {
        guard cell.format == .binary, cell.dataType == .int8, let bytes = cell.bytes, bytes.readableBytes == 8 else { return nil }
        return bytes.getInteger(at: bytes.readerIndex, as: Int64.self)
    }
}
