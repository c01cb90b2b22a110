import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SyncAPI
import SyncClient
import TestSupport
import Testing

/// A real server on a random loopback port, in this process, on a fresh database of one backend: the SDK reaches it
/// over HTTP as an app would.
struct LiveServer: Sendable {
    let base: URL
    let database: DatabaseURL
    let raw: any TestClientProtocol

    /// `database`: a database of the caller's (a PostgreSQL it stops and restarts), else a fresh one of `backend`;
    /// `model`: the data model served (the default model without it).
    /// `configure`: the test's own settings on top (identity providers…).
    static func run<T: Sendable>(
        _ backend: Backend, database: DatabaseURL? = nil, model: DataModel? = nil, configure: (inout AppConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (LiveServer) async throws -> T
    ) async throws -> T {
        var configuration = AppConfiguration()
        if let model { configuration.model = model }
        configure(&configuration)
        if let database {
            configuration.database = database
            // The caller stops that database: answers 503 within 2 s rather than 10.
            configuration.databaseDeadline = .seconds(2)
        } else {
            configuration.database = try await backend.freshDatabaseURL()
            configuration.databaseDeadline = testDeadline
            configuration.requestTimeLimit = testDeadline
        }
        configuration.bcryptCost = testBcryptCost
        configuration.port = 0
        configuration.changesPingInterval = .seconds(1)
        // HummingbirdTesting's client connects as the test starts and may first use its connection much later on a
        // loaded machine: past the server's first-head timeout the server closes it (seen: "I/O on closed channel").
        configuration.headerReadTimeout = .seconds(300)
        let database = configuration.database
        var logger = Logger(label: "client-tests")
        logger.logLevel = .warning
        let app = try await buildApplication(configuration, logger: logger)
        let test = Test.current?.name ?? "(no test)"
        let abandoned: @Sendable (String) -> Void = { message in
            withKnownIssue("A test application's shutdown hangs, rarely (HangWatch.application)", isIntermittent: true) {
                Issue.record(Comment(rawValue: message))
            }
        }
        return try await HangWatch.application("\(test) [\(backend)] (live server)", abandoned: abandoned) { inBody in
            try await app.test(.live) { client in
                try await inBody {
                    try await body(LiveServer(base: URL(string: "http://127.0.0.1:\(client.port!)")!, database: database, raw: client))
                }
            }
        }
    }

    /// A new SDK client on a replica file of its own (or the given one: a restart). Writes wait for `sync()` unless
    /// `autoPush` (the tests that read the queue need it to stay put).
    func client(replica: String? = nil, server: URL? = nil, fastRetries: Bool = true, autoPush: Bool = false) throws -> SyncClient {
        let path = replica ?? Self.replicaPath()
        var configuration = SyncClientConfiguration(serverURL: server ?? base, replicaPath: path)
        configuration.pageSize = 5
        configuration.maxChildren = 3
        if !autoPush { configuration.pushDelay = nil }
        if fastRetries { configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(10)) }
        return try SyncClient(configuration: configuration)
    }

    static func replicaPath() -> String {
        TestScratch.path("replica-", suffix: ".sqlite")
    }

    /// A raw HTTP call with a token (a writer that is not the SDK).
    func call(_ method: HTTPRequest.Method, _ path: String, token: String?, body: String? = nil) async throws -> (status: Int, json: ClientJSON?) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let response = try await raw.executeRequest(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        return (Int(response.status.code), try? ClientJSON.parse(Data(response.body.readableBytesView)))
    }

    /// The server's full list of a collection, by id, as JSON text (what an exact replica must hold).
    func serverList(_ endpoint: String, token: String) async throws -> [String: String] {
        let answer = try await call(.get, "/api/v1/\(endpoint)", token: token)
        var out: [String: String] = [:]
        for item in answer.json?["updated"]?.arrayValue ?? [] { out[item["id"]!.stringValue!] = item.objectValue!.jsonText }
        return out
    }
}

/// The replica's items by id, as JSON text.
func replicaList(_ client: SyncClient, _ collection: SyncCollection) throws -> [String: String] {
    Dictionary(uniqueKeysWithValues: try client.items(collection).map { ($0["id"]!.stringValue!, $0.jsonText) })
}

/// A failure inside a test helper.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
