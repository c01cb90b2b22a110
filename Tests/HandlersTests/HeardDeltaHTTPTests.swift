import Foundation
import HTTPTypes
import Handlers
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Deltas answered from what the change hub heard, across two instances of one PostgreSQL database: a delta at the
/// counter an instance heard costs no read and answers the bytes a read does, and once it hears another instance's
/// write its delta at the old date carries that write.
@Suite("Deltas from the hub across instances", .sharingTheMachine)
struct HeardDeltaHTTPTests {
    /// The instance's `syncapi_deltas_from_hub` gauge.
    static func fromHub(_ client: any TestClientProtocol) async throws -> Int {
        let metrics = try await APIClient(client: client).call(.get, "/metrics").body
        for line in metrics.split(separator: "\n") where line.hasPrefix("syncapi_deltas_from_hub ") {
            if let value = Double(line.split(separator: " ")[1]) { return Int(value) }
        }
        throw TestFailure("no syncapi_deltas_from_hub in /metrics")
    }

    @Test("a delta at the heard counter reads nothing and answers a read's bytes; another instance's write, once heard, is in it")
    func acrossInstances() async throws {
        try await LiveHubTests.twoInstances { one, two in
            let api = try await APIClient.signedUp(one)
            let other = APIClient(client: two, token: api.token)
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A"}"#).status == .ok)
            let date = try #require(try await other.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // The first delta at the date reads (and records the counter it read), the second is the hub's.
            let read = try await other.call(.get, "/api/v1/ctcsync?date=\(date)")
            let before = try await Self.fromHub(two)
            let heard = try await other.call(.get, "/api/v1/ctcsync?date=\(date)")
            #expect(try await Self.fromHub(two) == before + 1)
            #expect(heard.status == .ok && heard.body == read.body, "\(heard.body) against \(read.body)")
            #expect(heard.json?["sync"] == .bool(true) && heard.json?["date"]?.stringValue == date)
            // A stream on the second instance, open before the write on the first: its change event is the notice
            // reaching the second instance's hub (which records the counter before it wakes the stream).
            let stream = try EventStreamReader(port: try #require(two.port), path: "/api/v1/changes?date=\(date)", token: api.token)
            defer { stream.disconnect() }
            try await HardeningHTTPTests.waitForStreams(two, count: 1)
            #expect(try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"B"}"#).status == .ok)
            _ = try await stream.next(where: { $0.name == "change" })
            let after = try await other.call(.get, "/api/v1/ctcsync?date=\(date)")
            guard case .array(let updated)? = after.json?["updated"] else { throw TestFailure(after.body) }
            #expect(updated.map { $0["id"] } == [.string("c2")])
            #expect(try await Self.fromHub(two) == before + 1, "the moved space was read")
        }
    }
}

/// A group's run of sync reads answered from what the hub heard: no snapshot, every answer at one counter value, the
/// bytes the same reads answer one by one.
@Suite("A group's reads from the hub")
struct HeardGroupHTTPTests {
    static let endpoints = ["ctcsync", "evtsync", "familysync"]

    /// The group of the three syncs at `date`, its answers' bodies by endpoint.
    static func group(_ api: APIClient, at date: String) async throws -> [String: JSONValue] {
        let requests = endpoints.map { #"{"id":"\#($0)","method":"GET","url":"/api/v1/\#($0)?date=\#(date)"}"# }
        let answer = try await api.call(.post, "/api/v1/group", body: #"{"requests":["# + requests.joined(separator: ",") + "]}")
        guard answer.status == .ok, case .array(let responses)? = answer.json?["responses"] else { throw TestFailure(answer.body) }
        var bodies: [String: JSONValue] = [:]
        for response in responses {
            guard response["status"] == .number(200), let id = response["id"]?.stringValue, let body = response["body"] else {
                throw TestFailure("\(response)")
            }
            bodies[id] = body
        }
        return bodies
    }

    /// The three syncs at `date`, one request each.
    static func alone(_ api: APIClient, at date: String) async throws -> [String: JSONValue] {
        var bodies: [String: JSONValue] = [:]
        for endpoint in endpoints { bodies[endpoint] = try await api.call(.get, "/api/v1/\(endpoint)?date=\(date)").json }
        return bodies
    }

    @Test(
        "a run of syncs at the heard counter, or over ranges kept, is answered with no read: the bytes of the reads, one date",
        arguments: Backend.allCases)
    func groupFromHub(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A"}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/events/e1", body: #"{"title":"E","start":"2026-11-29T10:00:00Z"}"#).status.code < 300)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // Unchanged: the one-by-one answers (the first reads and records the counter), then the group.
            let one = try await Self.alone(api, at: date)
            let hits = try await HeardDeltaHTTPTests.fromHub(client)
            let grouped = try await Self.group(api, at: date)
            #expect(try await HeardDeltaHTTPTests.fromHub(client) == hits + 3, "the run was not answered from the hub")
            #expect(grouped == one)
            // Changed since the date, by a write through this instance (its entry goes): the run pins a snapshot and
            // carries the write; then the one-by-one reads keep their ranges, and the group is answered from them.
            #expect(try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"B"}"#).status == .ok)
            let snapshot = try await Self.group(api, at: date)
            guard case .array(let updated)? = snapshot["ctcsync"]?["updated"] else { throw TestFailure("\(snapshot)") }
            #expect(updated.map { $0["id"] } == [.string("c2")])
            let ranges = try await Self.alone(api, at: date)
            let before = try await HeardDeltaHTTPTests.fromHub(client)
            let kept = try await Self.group(api, at: date)
            #expect(try await HeardDeltaHTTPTests.fromHub(client) == before + 3, "the run was not answered from the kept ranges")
            #expect(kept == ranges)
            #expect(Set(kept.values.compactMap { $0["date"]?.stringValue }).count == 1, "one date for the run: \(kept)")
        }
    }

    @Test("groups alone: the first run pins a snapshot and keeps its ranges, the next is answered from them", arguments: Backend.allCases)
    func groupsAlone(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A"}"#).status == .ok)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            #expect(try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"B"}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/events/e1", body: #"{"title":"E","start":"2026-11-29T10:00:00Z"}"#).status.code < 300)
            let first = try await Self.group(api, at: date)
            let hits = try await HeardDeltaHTTPTests.fromHub(client)
            let second = try await Self.group(api, at: date)
            #expect(try await HeardDeltaHTTPTests.fromHub(client) == hits + 3, "the second run was not answered from the first's ranges")
            #expect(second == first)
            guard case .array(let contacts)? = second["ctcsync"]?["updated"], case .array(let events)? = second["evtsync"]?["updated"] else {
                throw TestFailure("\(second)")
            }
            #expect(contacts.map { $0["id"] } == [.string("c2")] && events.map { $0["id"] } == [.string("e1")])
        }
    }
}
