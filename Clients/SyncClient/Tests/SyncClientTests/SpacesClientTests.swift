import Foundation
import SyncClient
import SyncClientTesting
import Synchronization
import Testing

/// Spaces in the SDK (protocol §15): a client bound to a space sends every path of a space, and every sub-request of
/// its groups, under `/spaces/{id}`; the account's calls stay as they are; a space the account lost erases the
/// replica's data once.
@Suite("Spaces in the SDK")
struct SpacesClientTests {
    /// The fake server serves one space, `s1`, under its prefix, and lists the spaces; once `removed`, the space's
    /// paths answer 404 as the server does for a space the account left.
    final class SpaceTransport: HTTPTransport {
        let server = FakeSyncServer()
        let removed = Mutex(false)
        /// Every path the client asked for, prefix included, sub-requests too.
        let paths = Mutex<[String]>([])
        static let prefix = "/api/v1/spaces/s1"

        func send(_ call: HTTPCall) async throws -> HTTPAnswer {
            var call = call
            let path = call.url.path
            paths.withLock { $0.append(path) }
            let gone = removed.withLock { $0 }
            if path == "/api/v1/spaces" {
                let spaces: [[String: JSONValue]] =
                    [["id": "home", "name": "Home", "role": "owner", "home": true]]
                    + (gone ? [] : [["id": "s1", "name": "Club", "role": "member", "home": false]])
                return Self.json(200, .array(spaces.map(JSONValue.object)))
            }
            if path.hasPrefix(Self.prefix + "/") {
                if gone { return Self.json(404, ["code": "not_found", "status": 404, "detail": "No such space."]) }
                call.url = URL(string: call.url.absoluteString.replacingOccurrences(of: Self.prefix, with: "/api/v1"))!
            }
            if path == "/api/v1/group", let body = call.body, case .object(var group) = try JSONValue.parse(body),
                case .array(let requests)? = group["requests"]
            {
                var rewritten: [JSONValue] = []
                for request in requests {
                    guard case .object(var sub) = request, let url = sub["url"]?.stringValue else { continue }
                    paths.withLock { $0.append(url) }
                    sub["url"] = .string(url.replacingOccurrences(of: Self.prefix, with: "/api/v1"))
                    rewritten.append(.object(sub))
                }
                if gone {
                    let answers = requests.map { request -> JSONValue in
                        ["id": request["id"] ?? "", "status": 404, "body": ["code": "not_found", "status": 404, "detail": "No such space."]]
                    }
                    return Self.json(200, ["responses": .array(answers)])
                }
                group["requests"] = .array(rewritten)
                call.body = Data(JSONValue.object(group).text.utf8)
            }
            return try await server.send(call)
        }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await server.stream(call)
        }

        static func json(_ status: Int, _ body: JSONValue) -> HTTPAnswer {
            HTTPAnswer(status: status, headers: ["Content-Type": "application/json"], body: Data(body.text.utf8))
        }
    }

    static func client(_ transport: SpaceTransport, space: String?) throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("spaces-"))
        configuration.transport = transport
        configuration.pushDelay = nil
        configuration.space = space
        configuration.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .milliseconds(1), sleep: { _ in })
        return try SyncClient(configuration: configuration)
    }

    @Test("a client of a space syncs and writes under its prefix; account calls stay unprefixed; another space is another replica")
    func prefixed() async throws {
        let transport = SpaceTransport()
        let home = try Self.client(transport, space: nil)
        try await home.signUp(family: "Smith", username: "alice", password: "password1")
        #expect(try await home.spaces().map(\.id) == ["home", "s1"])
        let club = try home.client(forSpace: "s1", replicaPath: Scratch.path("spaces-club-"))
        #expect(club.isSignedIn, "the session is shared through the token store")
        try await club.save(Contact(id: "c1", firstName: "Ann"))
        try await club.sync()
        #expect(transport.server.items(.contacts)["c1"]?["firstName"] == "Ann")
        let paths = transport.paths.withLock { $0 }
        #expect(paths.contains("/api/v1/spaces/s1/contacts/c1") && paths.contains("/api/v1/spaces/s1/ctcsync"), "\(paths)")
        #expect(paths.contains("/api/v1/group") && !paths.contains("/api/v1/spaces/s1/group"))
        #expect(!paths.contains { $0.hasPrefix("/api/v1/spaces/s1/model") || $0.hasPrefix("/api/v1/spaces/s1/spaces") })
        #expect(try home.all(Contact.self).isEmpty, "the home replica holds the home space only")
    }

    @Test("removed from the space: the next sync erases the space's replica and says so, once")
    func removed() async throws {
        let transport = SpaceTransport()
        let home = try Self.client(transport, space: nil)
        try await home.signUp(family: "Smith", username: "alice", password: "password1")
        let club = try home.client(forSpace: "s1", replicaPath: Scratch.path("spaces-club-"))
        transport.server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        try await club.sync()
        #expect(try club.all(Contact.self).map(\.id) == ["c1"])
        transport.removed.withLock { $0 = true }
        await #expect(throws: SyncClientError.spaceRemoved("s1")) { try await club.sync() }
        #expect(try club.all(Contact.self).isEmpty)
        #expect(club.dateOfSync == nil)
    }
}
