import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import SyncAPI
import SyncPostgres
import TestSupport
import Testing

/// While the database is unreachable the server answers 503 `unavailable` with `Retry-After`, never a 500.
@Suite("Database unreachable", .sharingTheMachine)
struct UnavailableTests {
    @Test("ready and data routes answer 503 unavailable")
    func unreachable() async throws {
        let client = PostgresClient(
            configuration: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: "none", tls: .disable),
            backgroundLogger: Logger(label: "test"))
        let store = PostgresStore(client: client, logger: Logger(label: "test"), timers: testTimers, deadline: .seconds(1))
        let producers = AnswerProducers()
        var app = Application(
            router: buildRouter(roles: StoreRoles(store), producers: producers, timers: testTimers, media: store, configuration: AppConfiguration()))
        app.addServices(client)
        app.addServices(producers)
        for service in store.services { app.addServices(service) }
        try await HangWatch.watched(app, "app", mode: .router) { client in
            for path in ["/ready", "/api/v1/ctcsync"] {
                let response = try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer abc"])
                #expect(response.status == .serviceUnavailable, "\(path)")
                #expect(response.headers[.retryAfter] == "5")
                let problem = try JSONParser.parse(response.body.readableBytesView)
                #expect(problem["code"] == .string("unavailable"))
            }
            #expect(try await client.execute(uri: "/health", method: .get).status == .ok)
        }
    }
}
