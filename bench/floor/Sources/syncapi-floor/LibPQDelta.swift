import CLibPQ
import NIOCore
import NIOPosix

/// The same delta as `CollectionDelta`, through libpq (pgbench's own client library) on a pool of blocking threads,
/// one connection per thread: does another driver lift the floor's share of pgbench's rate (docs/performance.md)?
/// Each request hops to a pool thread, runs the prepared statement with text results and hops back.
final class LibPQDelta: Sendable {
    /// One thread's connection, with the statement prepared on it; used only by its own thread.
    final class Connection: @unchecked Sendable {
        let handle: OpaquePointer

        init(_ conninfo: String) throws {
            let handle = PQconnectdb(conninfo)
            guard let handle, PQstatus(handle) == CONNECTION_OK else {
                PQfinish(handle)
                throw LibPQError.connect
            }
            self.handle = handle
            let prepared = PQprepare(handle, "floor_delta", CollectionDelta.sql, 4, nil)
            defer { PQclear(prepared) }
            guard PQresultStatus(prepared) == PGRES_COMMAND_OK else { throw LibPQError.prepare }
        }

        deinit { PQfinish(handle) }
    }

    enum LibPQError: Error { case connect, prepare, query }

    private let pool: NIOThreadPool
    private let connections = ThreadSpecificVariable<Connection>()
    private let conninfo: String

    init(conninfo: String, threads: Int) {
        self.conninfo = conninfo
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// The delta's answer, as the NIO route builds it; nil when no row came back (no such family).
    func answer(family: String, since: Int64) async throws -> ByteBuffer? {
        try await pool.runIfActive { [connections, conninfo] in
            let connection: Connection
            if let current = connections.currentValue {
                connection = current
            } else {
                connection = try Connection(conninfo)
                connections.currentValue = connection
            }
            do {
                return try Self.run(on: connection.handle, family: family, since: since)
            } catch {
                // A connection the database dropped (a restart) is let go: the thread's next request connects anew.
                if PQstatus(connection.handle) != CONNECTION_OK { connections.currentValue = nil }
                throw error
            }
        }
    }

    private static func run(on handle: OpaquePointer, family: String, since: Int64) throws -> ByteBuffer? {
        let values = [family, "contacts", String(since), "t"]
        let result = withArrayOfCStrings(values) { pointers in
            PQexecPrepared(handle, "floor_delta", 4, pointers, nil, nil, 0)
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw LibPQError.query }
        let rows = PQntuples(result)
        guard rows > 0, let version = PQgetvalue(result, 0, 0) else { return nil }
        var answer = ByteBuffer()
        answer.writeString("{\"version\":\(String(cString: version)),\"items\":[")
        var first = true
        for row in 0..<rows where PQgetisnull(result, row, 6) == 0 {
            if !first { answer.writeString(",") }
            let length = Int(PQgetlength(result, row, 6))
            PQgetvalue(result, row, 6).withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
                _ = answer.writeBytes(UnsafeBufferPointer(start: bytes, count: length))
            }
            first = false
        }
        answer.writeString("]}")
        return answer
    }
}

/// `values` as the C strings that libpq takes, alive for `body`.
private func withArrayOfCStrings<R>(_ values: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = values.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) })
}
