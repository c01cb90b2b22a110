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
