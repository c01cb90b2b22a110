import Hummingbird
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// The least a server on this stack does for a delta: the bench's `delta-*` cases with everything of SyncAPI's own
/// taken out (no token, no date to check, no deadline, no metrics, no answer model): one pooled connection, the
/// server's prepared statement of a collection's delta, and each row's body copied into the answer as it comes.
///
/// `GET /floor/delta?family=<family id>&since=<date of sync>` (the version is what follows the date's last dot);
/// `GET /health` answers `ok`, the plaintext route; an unknown family is 404. Run by bench/harness.py `--floor`.
struct CollectionDelta: PostgresPreparedStatement {
    static let name = "floor_collection_delta"
    // The SQL of PreparedStatements.CollectionDelta in Sources/SyncPostgres/PreparedStatements.swift.
    static let sql = """
        SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
        FROM families f
        LEFT JOIN items i ON i.family_id = f.id AND i.collection = (SELECT $2::text) AND i.parent_id = ''
          AND i.version > (SELECT $3::int8) AND ((SELECT $4::bool) OR NOT i.deleted)
        WHERE f.id = (SELECT $1::text)
        ORDER BY i.version
        """
    typealias Row = PostgresRow
    let familyID: String
    let since: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(familyID)
        bindings.append("contacts")
        bindings.append(since)
        bindings.append(true)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

func option(_ name: String, _ fallback: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}

// `--loops-as-executor`: NIO's event loops as Swift concurrency's executor, no hop between the two (measured: the same
// rate as without, docs/performance.md).
// `--loop-threads N`: N event loop threads (default: one per core), for the HTTP server, PostgresNIO and, with
// `--loops-as-executor`, every task.
if let threads = Int(option("--loop-threads", "")), threads > 0 { NIOSingletons.groupLoopCountSuggestion = threads }
if CommandLine.arguments.contains("--loops-as-executor") {
    _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}
var logger = Logger(label: "syncapi-floor")
logger.logLevel = .warning
var configuration = PostgresClient.Configuration(
    host: option("--db-host", "127.0.0.1"), port: Int(option("--db-port", "5432")) ?? 5432,
    username: option("--db-user", "postgres"), password: nil, database: option("--db-name", "postgres"), tls: .disable)
let connections = Int(option("--connections", "6")) ?? 6
configuration.options.minimumConnections = connections
configuration.options.maximumConnections = connections
let client = PostgresClient(configuration: configuration, backgroundLogger: logger)

let libpq = LibPQDelta(
    conninfo: "host=\(option("--db-host", "127.0.0.1")) port=\(option("--db-port", "5432")) "
        + "user=\(option("--db-user", "postgres")) dbname=\(option("--db-name", "postgres"))",
    threads: connections)

/// The family and the version of the date that a floor route is asked for; nil when either is missing.
func deltaQuestion(_ request: Request) -> (family: String, since: Int64)? {
    guard let family = request.uri.queryParameters["family"], let date = request.uri.queryParameters["since"],
        let dot = date.lastIndex(of: "."), let since = Int64(date[date.index(after: dot)...])
    else { return nil }
    return (String(family), since)
}

let router = Router()
router.get("health") { _, _ in "ok" }
router.get("floor/delta") { request, _ -> Response in
    guard let (family, since) = deltaQuestion(request) else { return Response(status: .badRequest) }
    let statement = CollectionDelta(familyID: family, since: since)
    let answer = try await client.withConnection { conn -> ByteBuffer? in
        var answer = ByteBuffer()
        var first = true
        for try await row in try await conn.execute(statement, logger: logger) {
            var cells = row.makeIterator()
            // Every row carries the family's version first; the first row's starts the answer.
            if var version = cells.next()?.bytes, first, let value = version.readInteger(as: Int64.self) {
                answer.writeString("{\"version\":\(value),\"items\":[")
            }
            for _ in 0..<5 { _ = cells.next() }
            if var body = cells.next()?.bytes {
                if !first { answer.writeString(",") }
                answer.writeBuffer(&body)
            }
            first = false
        }
        answer.writeString("]}")
        return first ? nil : answer
    }
    // No row at all: no such family (the bench's smoke run fails on it: the wrk script's families are wrong).
    guard let answer else { return Response(status: .notFound) }
    return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: answer))
}
// The same answer through libpq on blocking threads (`LibPQDelta`).
router.get("floor/delta-libpq") { request, _ -> Response in
    guard let (family, since) = deltaQuestion(request) else { return Response(status: .badRequest) }
    guard let answer = try await libpq.answer(family: family, since: since) else {
        return Response(status: .notFound)
    }
    return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: answer))
}
let port = Int(option("--port", "8090")) ?? 8090
let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), services: [client], logger: logger)
try await app.runService()
