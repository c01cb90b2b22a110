import PostgresNIO
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// `ColumnReader` reads the common types straight from a cell's bytes: the same values as PostgresNIO's decoding,
/// NULLs included, and any other type still through PostgresNIO's decoding.
@Suite("Reading PostgreSQL columns", .sharingTheMachine)
struct ColumnReaderTests {
    @Test("int8, int4, bool and text read from their bytes, NULLs as nil, other types through PostgresNIO")
    func readsEveryColumn() async throws {
        try await Backend.postgres.withStore { opened in
            let store = try #require(opened as? PostgresStore)
            try await store.read { conn in
                let rows = try await conn.query(
                    """
                    SELECT '-9223372036854775808'::int8, NULL::int8, 42::int8, 2147483647::int4, true, false, NULL::bool,
                      'héllo ✓'::text, NULL::text, ''::text, 'v'::varchar, 7::int4, 'n'::name
                    """, logger: store.logger)
                var read = 0
                for try await row in rows {
                    var r = ColumnReader(row)
                    #expect(try r.next() as Int64 == .min)
                    #expect(try r.next() as Int64? == nil)
                    #expect(try r.next() as Int64? == 42)
                    #expect(try r.next() as Int32 == .max)
                    #expect(try r.next() as Bool? == true)
                    #expect(try r.next() as Bool? == false)
                    #expect(try r.next() as Bool? == nil)
                    #expect(try r.next() as String == "héllo ✓")
                    #expect(try r.next() as String? == nil)
                    #expect(try r.next() as String? == "")
                    #expect(try r.next() as String == "v")
                    // An int4 read as Int64, a name read as String: PostgresNIO's decoding.
                    #expect(try r.next() as Int64 == 7)
                    #expect(try r.next() as String == "n")
                    #expect(throws: ColumnReader.MissingColumn.self) { try r.next() as Int64 }
                    read += 1
                }
                #expect(read == 1)
            }
        }
    }
}
