import Foundation
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import TestSupport
import Testing

/// Issue 56, item 3 (docs/decisions.md, "Histories after a failover"): a real primary and streaming standby; the standby
/// promoted after the primary crashed with commits it never sent (asynchronous replication), or after a clean stop (a
/// switchover). A date issued on a lost commit answers `sync: false` on the new primary, even once the new line's
/// counter has passed it; every other date, of that space or of another, is still answered as a delta.
@Suite("Histories after a failover", .sharingTheMachine, .serialized)
struct FailoverHistoryTests {
    @Test("commits lost with the primary: their dates answer sync false, every other date a delta")
    func lostCommits() async throws {
        try await HeavyTestGate.shared.run { try await TestStandby.with { try await Self.runLost($0) } }
    }

    @Test("a switchover (the standby had every commit): no date answers sync false")
    func switchover() async throws {
        try await HeavyTestGate.shared.run { try await TestStandby.with { try await Self.runSwitchover($0) } }
    }

    /// The dates of one space's lists, each read at the same state.
    struct Dates: Sendable {
        var contacts: String
        var bundle: String
        var wall: String
    }

    static func runLost(_ servers: TestStandby) async throws {
        let urls = try await servers.newDatabase()
        // Replicated: two spaces, their accounts and first items; the dates read then.
        let (tokens, shared, other) = try await Self.onApplication(urls.primary) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "F1")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "F2")
            try await Self.put(alice, "/api/v1/contacts/c1", #"{"firstName":"Ann"}"#)
            try await Self.put(alice, "/api/v1/contacts/c2", #"{"firstName":"Ben"}"#)
            try await Self.put(alice, "/api/v1/wall/w1", #"{"type":"text","text":"hello"}"#)
            try await Self.put(bob, "/api/v1/contacts/b1", #"{"firstName":"Bea"}"#)
            return ((alice.token!, bob.token!), try await Self.dates(alice), try await Self.sync(bob, "ctcsync").date)
        }
        try await servers.waitReplayed()
        try await servers.stopStandby()
        // Lost: alice's space moves on the primary alone; the dates of that state are handed out.
        let lost = try await Self.onApplication(urls.primary) { client in
            let alice = APIClient(client: client, token: tokens.0)
            try await Self.put(alice, "/api/v1/contacts/c3", #"{"firstName":"Cy"}"#)
            try await Self.put(alice, "/api/v1/wall/w2", #"{"type":"text","text":"lost"}"#)
            let lost = try await Self.dates(alice)
            #expect(try await Self.sync(alice, "ctcsync?date=\(shared.contacts)").ids == ["c3"])
            return lost
        }
        try await servers.stopPrimary(crash: true)
        try await servers.startStandby()
        try await servers.promoteStandby()
        try await Self.onApplication(urls.standby) { client in
            let alice = APIClient(client: client, token: tokens.0)
            let bob = APIClient(client: client, token: tokens.1)
            // Before any write on the new line: the lost dates are past the counter; the shared ones are deltas.
            try await Self.expect(alice, lost, sync: false, contacts: ["c1", "c2"])
            try await Self.expect(alice, shared, sync: true, contacts: [])
            // The new line takes the counter values the lost commits had.
            try await Self.put(alice, "/api/v1/contacts/c4", #"{"firstName":"Di"}"#)
            try await Self.put(alice, "/api/v1/wall/w3", #"{"type":"text","text":"new"}"#)
            try await Self.expect(alice, lost, sync: false, contacts: ["c1", "c2", "c4"])
            try await Self.expect(alice, shared, sync: true, contacts: ["c4"])
            // A date of the new line names its history, and is answered as a delta.
            let now = try await Self.dates(alice)
            #expect(now.contacts.contains("~"), "\(now.contacts)")
            try await Self.expect(alice, now, sync: true, contacts: [])
            // Another space, untouched by the lost commits: its date is still a delta, before and after it moves.
            var answer = try await Self.sync(bob, "ctcsync?date=\(other)")
            #expect(answer.sync == true && answer.ids.isEmpty)
            try await Self.put(bob, "/api/v1/contacts/b2", #"{"firstName":"Bo"}"#)
            answer = try await Self.sync(bob, "ctcsync?date=\(other)")
            #expect(answer.sync == true && answer.ids == ["b2"])
        }
    }

    static func runSwitchover(_ servers: TestStandby) async throws {
        let urls = try await servers.newDatabase()
        let (token, before) = try await Self.onApplication(urls.primary) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "F1")
            try await Self.put(alice, "/api/v1/contacts/c1", #"{"firstName":"Ann"}"#)
            try await Self.put(alice, "/api/v1/wall/w1", #"{"type":"text","text":"hello"}"#)
            return (alice.token!, try await Self.dates(alice))
        }
        try await servers.waitReplayed()
        try await servers.stopPrimary(crash: false)
        try await servers.promoteStandby()
        try await Self.onApplication(urls.standby) { client in
            let alice = APIClient(client: client, token: token)
            try await Self.expect(alice, before, sync: true, contacts: [])
            try await Self.put(alice, "/api/v1/contacts/c2", #"{"firstName":"Ben"}"#)
            try await Self.expect(alice, before, sync: true, contacts: ["c2"])
        }
    }

    // MARK: Helpers

    /// Runs `body` against a new application on `url`, over real HTTP; the application stops at the end.
    static func onApplication<T: Sendable>(_ url: String, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        var configuration = AppConfiguration()
        configuration.database = try DatabaseURL(parsing: url)
        configuration.bcryptCost = testBcryptCost
        configuration.port = 0
        configuration.headerReadTimeout = .seconds(300)
        configuration.requestTimeLimit = testDeadline
        configuration.databaseDeadline = testDeadline
        var logger = Logger(label: "failover")
        logger.logLevel = .error
        return try await HangWatch.watched(try await buildApplication(configuration, logger: logger), "failover", mode: .live, body)
    }

    static func put(_ api: APIClient, _ path: String, _ body: String) async throws {
        let answer = try await api.call(.put, path, body: body)
        guard answer.status.code / 100 == 2 else { throw TestFailure("PUT \(path): \(answer.status) \(answer.body)") }
    }

    /// A sync's date, `sync` flag and the ids of its `updated` items (`ctcsync`), in order.
    static func sync(_ api: APIClient, _ path: String) async throws -> (date: String, sync: Bool?, ids: [String]) {
        let answer = try await api.call(.get, "/api/v1/\(path)")
        guard answer.status == .ok, let json = answer.json, let date = json["date"]?.stringValue else {
            throw TestFailure("GET \(path): \(answer.status) \(answer.body)")
        }
        var ids: [String] = []
        if case .array(let items) = json["updated"] ?? .null {
            for item in items { if let id = item["id"]?.stringValue { ids.append(id) } }
        }
        var sync: Bool?
        if case .bool(let flag) = json["sync"] ?? .null { sync = flag }
        return (date, sync, ids)
    }

    static func dates(_ api: APIClient) async throws -> Dates {
        Dates(
            contacts: try await sync(api, "ctcsync").date, bundle: try await sync(api, "familysync").date,
            wall: try await sync(api, "wallsync").date)
    }

    /// The contacts' delta (sorted ids), the bundle's and the wall's `sync` flags from `dates`.
    static func expect(
        _ api: APIClient, _ dates: Dates, sync expected: Bool, contacts: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let list = try await sync(api, "ctcsync?date=\(dates.contacts)")
        #expect(list.sync == expected, "ctcsync", sourceLocation: sourceLocation)
        #expect(list.ids.sorted() == contacts, "ctcsync", sourceLocation: sourceLocation)
        #expect(try await sync(api, "familysync?date=\(dates.bundle)").sync == expected, "familysync", sourceLocation: sourceLocation)
        #expect(try await sync(api, "wallsync?date=\(dates.wall)").sync == expected, "wallsync", sourceLocation: sourceLocation)
    }
}
