import Foundation
import SyncClient
import SyncClientTesting
import Testing

/// The session's contracts (issue 40, item 6): a logout that cannot push throws `unpushedWrites` and keeps the failed
/// writes unless told; signing in as another account never erases unsent writes unasked.
@Suite("Session contracts", .timeLimit(.minutes(10)))
struct SessionContractTests {
    /// A client of `server`, writes waiting for `push()` or `sync()`, retries at once.
    static func client(_ server: any HTTPTransport, path: String = Scratch.path("session-")) throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: path)
        configuration.transport = server
        configuration.pushDelay = nil
        configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(1), sleep: { _ in })
        return try SyncClient(configuration: configuration)
    }

    @Test("an offline logOut throws unpushedWrites with the writes, and stays signed in; online, it pushes them first")
    func offlineLogOut() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
        server.isOffline = true
        await #expect(throws: SyncClientError.unpushedWrites(try client.pendingOperations())) { try await client.logOut() }
        #expect(client.isSignedIn && client.status.signedIn)
        #expect(try client.pendingOperations().map(\.id) == ["c1"])
        #expect(try client.items(.contacts).count == 1)
        // Back online: the same call pushes them, then signs out.
        server.isOffline = false
        try await client.logOut()
        #expect(!client.isSignedIn && server.items(.contacts)["c1"] != nil)
    }

    @Test("a logOut keeps the failed writes (for the app, and for the same account's next sign-in) unless erasingFailedWrites")
    func failedWritesKept() async throws {
        let server = FakeSyncServer()
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        // A write the server refuses for good (its body is over the server's limit).
        server.limits.bodyMaxBytes = 2048
        try await client.save(.contacts, id: "big", json: ["notes": .string(String(repeating: "n", count: 4000))])
        try await client.push()
        #expect(try client.failedOperations().map(\.id) == ["big"])
        try await client.logOut()
        #expect(!client.isSignedIn)
        #expect(try client.failedOperations().map(\.id) == ["big"], "kept after the logout")
        #expect(client.status.failedWrites == 1)
        try await client.logIn(username: "alice", password: "password1")
        #expect(try client.failedOperations().map(\.id) == ["big"], "the same account finds them")
        try await client.logOut(erasingFailedWrites: true)
        #expect(try client.failedOperations().isEmpty && client.status.failedWrites == 0)
    }

    @Test("signing in as another account while writes wait is refused (nothing erased) unless discardingPendingWrites")
    func accountSwitch() async throws {
        let server = Accounts(FakeSyncServer())
        let client = try Self.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.logOut()
        try await client.logIn(username: "alice", password: "password1")
        #expect(client.currentSession?.accountID == "account-alice")
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
        // Bob's sign-in would lose Alice's unsent write: refused, and the token it got is revoked.
        _ = try await server.fake.send(
            HTTPCall(method: "POST", url: URL(string: "https://fake.example/api/v1/signup")!, body: Data(#"{"username":"bob","password":"pw"}"#.utf8))
        )
        let calls = server.fake.calls.count
        await #expect(throws: SyncClientError.unpushedWrites(try client.pendingOperations())) {
            try await client.logIn(username: "bob", password: "pw")
        }
        #expect(Array(server.fake.calls.dropFirst(calls)) == ["POST /login", "POST /logout"])
        #expect(client.currentSession?.accountID == "account-alice")
        #expect(try client.pendingOperations().map(\.id) == ["c1"])
        #expect(try client.items(.contacts).count == 1)
        // A sign-up is always another account: refused before any request.
        await #expect(throws: SyncClientError.self) { try await client.signUp(family: "Jones", username: "carol", password: "pw") }
        #expect(server.fake.calls.count == calls + 2)
        // Alice again keeps them; asked to discard them, Bob's sign-in erases them with the rest of Alice's replica.
        try await client.logIn(username: "alice", password: "password1")
        #expect(try client.pendingOperations().map(\.id) == ["c1"])
        try await client.logIn(username: "bob", password: "pw", discardingPendingWrites: true)
        #expect(client.currentSession?.accountID == "account-bob")
        #expect(try client.pendingOperations().isEmpty)
        #expect(try client.items(.contacts).isEmpty)
    }
}

/// The fake server with one account id per username (the fake itself has one account): what tells the SDK that
/// another account signed in.
struct Accounts: HTTPTransport {
    let fake: FakeSyncServer

    init(_ fake: FakeSyncServer) { self.fake = fake }

    func send(_ call: HTTPCall) async throws -> HTTPAnswer {
        var answer = try await fake.send(call)
        let path = call.url.path
        guard path.hasSuffix("/login") || path.hasSuffix("/signup"), answer.status < 300,
            let username = try JSONValue.parse(call.body ?? Data())["username"]?.stringValue,
            var grant = try JSONValue.parse(answer.body).objectValue
        else { return answer }
        grant["accountId"] = .string("account-" + username)
        answer.body = Data(JSONValue.object(grant).text.utf8)
        return answer
    }

    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        try await fake.stream(call)
    }
}
