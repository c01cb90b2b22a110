import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SyncAPI
import TestSupport
import Testing

/// A fresh application on a fresh database of one backend, for HTTP tests.
enum TestApp {
    static func configuration(_ backend: Backend) async throws -> AppConfiguration {
        var configuration = AppConfiguration()
        configuration.database = try await backend.freshDatabaseURL()
        configuration.bcryptCost = testBcryptCost
        configuration.port = 0
        // Live tests: HummingbirdTesting's client connects as the test starts and may first use its connection much
        // later on a loaded machine; the server must not close it for a late first head.
        configuration.headerReadTimeout = .seconds(300)
        configuration.requestTimeLimit = testDeadline
        configuration.databaseDeadline = testDeadline
        return configuration
    }

    /// Runs `body` with a router-level client of a new application.
    static func run<T: Sendable>(
        _ backend: Backend, mode: TestingSetup = .router, configure: (inout AppConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> T
    ) async throws -> T {
        var configuration = try await configuration(backend)
        configure(&configuration)
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let app = try await buildApplication(configuration, logger: logger)
        return try await HangWatch.watched(app, "\(backend)", mode: mode, body)
    }
}

/// A small HTTP helper over a test client: JSON in, parsed JSON out.
struct APIClient: Sendable {
    let client: any TestClientProtocol
    var token: String?

    struct Answer: Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: String
        /// The body's size in bytes (media answers are not text).
        var byteCount = 0
        var json: JSONValue? { try? JSONParser.parse(body) }
    }

    func call(
        _ method: HTTPRequest.Method, _ path: String, body: String? = nil, bytes: [UInt8]? = nil, headers: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = headers
        if let token, headers[.authorization] == nil { headers[.authorization] = "Bearer \(token)" }
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        let payload = bytes.map { ByteBuffer(bytes: $0) } ?? body.map { ByteBuffer(string: $0) }
        let response = try await HangWatch.step("\(HangWatch.testName): \(method) \(path)") {
            try await client.executeRequest(uri: path, method: method, headers: headers, body: payload)
        }
        return Answer(
            status: response.status, headers: response.headers, body: String(buffer: response.body), byteCount: response.body.readableBytes)
    }

    /// Signs up a new family and returns a client carrying its token.
    static func signedUp(
        _ client: any TestClientProtocol, username: String = "alice", family: String = "Smith"
    ) async throws
        -> APIClient
    {
        let answer = try await APIClient(client: client).call(
            .post, "/api/v1/signup", body: #"{"family":"\#(family)","username":"\#(username)","password":"password1"}"#)
        guard answer.status == .created, let token = answer.json?["token"]?.stringValue else {
            throw TestFailure("signup failed: \(answer.status) \(answer.body)")
        }
        return APIClient(client: client, token: token)
    }
}

/// A failure inside a test helper.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension HangWatch {
    /// The running test's name, for a step's name.
    static var testName: String { Test.current?.name ?? "(no test)" }

    /// `app.test(mode)` with its start, its body and its whole run as steps, its shutdown bounded
    /// (`HangWatch.application`): one that outlives `shutdownLimit` is recorded as a known, intermittent issue.
    static func watched<App: ApplicationProtocol, T: Sendable>(
        _ app: App, _ label: String, mode: TestingSetup, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> T
    ) async throws -> T {
        try await application("\(testName) [\(label)]", abandoned: recordAbandoned) { inBody in
            try await app.test(mode) { client in try await inBody { try await body(client) } }
        }
    }

    /// Records a shutdown given up on: known and intermittent, so that the test's verdict stays its body's.
    static func recordAbandoned(_ message: String) {
        withKnownIssue("A test application's shutdown hangs, rarely (HangWatch.application)", isIntermittent: true) {
            Issue.record(Comment(rawValue: message))
        }
    }
}
