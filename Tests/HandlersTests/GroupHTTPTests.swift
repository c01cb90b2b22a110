import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// `POST /group` on both backends: one snapshot for the reads, no second implementation of any endpoint.
@Suite("Group over HTTP", .sharingTheMachine)
struct GroupHTTPTests {
    static func group(_ api: APIClient, _ requests: [(id: String, method: String, url: String)]) async throws -> [String: JSONValue] {
        let body = JSONValue.object([
            ("requests", .array(requests.map { .object([("id", .string($0.id)), ("method", .string($0.method)), ("url", .string($0.url))]) }))
        ])
        let answer = try await api.call(.post, "/api/v1/group", body: JSONWriter.encode(body))
        guard answer.status == .ok, case .array(let responses)? = answer.json?["responses"] else {
            throw TestFailure("group failed: \(answer.status) \(answer.body)")
        }
        var out: [String: JSONValue] = [:]
        for response in responses { out[response["id"]?.stringValue ?? ""] = response }
        return out
    }

    /// Set once the writers are done.
    final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    @Test("the sync calls of a group share one date while writers run", arguments: Backend.allCases)
    func oneDate(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let done = Flag()
            let started = Flag()
            async let writers: Void = withThrowingTaskGroup(of: Void.self) { group in
                // Write only once a first group has answered, so that the groups see the data move.
                while !started.raised.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
                for writer in 0..<4 {
                    group.addTask {
                        for n in 0..<25 {
                            let path = ["contacts", "events", "places", "threads"][writer]
                            let body = [
                                #"{"firstName":"W\#(n)"}"#, #"{"title":"E","start":"2026-01-01T00:00:00Z"}"#, #"{"name":"P\#(n)"}"#,
                                #"{"title":"T\#(n)"}"#,
                            ][writer]
                            _ = try await api.call(.put, "/api/v1/\(path)/i\(n % 7)", body: body)
                        }
                    }
                }
                try await group.waitForAll()
                done.raised.store(true, ordering: .releasing)
            }
            var groups = 0
            var distinctDates = Set<String>()
            while !done.raised.load(ordering: .acquiring) || groups < 5 {
                let answers = try await Self.group(
                    api,
                    [
                        ("c", "GET", "/api/v1/ctcsync"), ("e", "GET", "/api/v1/evtsync"), ("p", "GET", "/api/v1/plcsync"),
                        ("t", "GET", "/api/v1/msgsyncthread"), ("f", "GET", "/api/v1/familysync"),
                    ])
                let dates = Set(answers.values.compactMap { $0["body"]?["date"]?.stringValue })
                #expect(dates.count == 1, "one group answered several dates: \(dates)")
                distinctDates.formUnion(dates)
                groups += 1
                started.raised.store(true, ordering: .releasing)
            }
            try await writers
            // One more group after the last write: its date differs from the first group's (before any write).
            let last = try await Self.group(api, [("c", "GET", "/api/v1/ctcsync"), ("e", "GET", "/api/v1/evtsync")])
            distinctDates.formUnion(last.values.compactMap { $0["body"]?["date"]?.stringValue })
            #expect(groups >= 5)
            #expect(distinctDates.count > 1, "the writers never moved the date: the test proved nothing")
        }
    }

    @Test("a group of ctcsync + evtsync never shows an event without the contact it names", arguments: Backend.allCases)
    func consistentSnapshot(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let done = Flag()
            async let writer: Void = {
                for n in 0..<40 {
                    _ = try await api.call(.put, "/api/v1/contacts/c\(n)", body: #"{"firstName":"C\#(n)"}"#)
                    _ = try await api.call(
                        .put, "/api/v1/events/e\(n)", body: #"{"title":"E","start":"2026-01-01T00:00:00Z","contactIds":["c\#(n)"]}"#)
                    if n % 3 == 0 {
                        // Deleting the event first, then its contact, keeps the rule true for a consistent reader.
                        _ = try await api.call(.delete, "/api/v1/events/e\(n)")
                        _ = try await api.call(.delete, "/api/v1/contacts/c\(n)")
                    }
                }
                done.raised.store(true, ordering: .releasing)
            }()
            var checked = 0
            var eventsSeen = 0
            while !done.raised.load(ordering: .acquiring) || checked < 4 {
                let answers = try await Self.group(api, [("c", "GET", "/api/v1/ctcsync"), ("e", "GET", "/api/v1/evtsync")])
                guard case .array(let contacts)? = answers["c"]?["body"]?["updated"],
                    case .array(let events)? = answers["e"]?["body"]?["updated"]
                else { throw TestFailure("bad group answer") }
                let contactIDs = Set(contacts.compactMap { $0["id"]?.stringValue })
                for event in events {
                    guard case .array(let named)? = event["contactIds"] else { continue }
                    for id in named.compactMap(\.stringValue) {
                        #expect(contactIDs.contains(id), "event \(event["id"]?.stringValue ?? "") without contact \(id)")
                    }
                }
                eventsSeen += events.count
                checked += 1
            }
            try await writer
            #expect(checked > 3 && eventsSeen > 0)
        }
    }

    @Test("a sub-request answers byte for byte as the same direct call, on every endpoint", arguments: Backend.allCases)
    func sameBytes(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let calls = try await Self.seededCalls(api)
            for (method, url, body) in calls {
                // The direct call first (a PUT here is a no-op repeat or an error, so the state stays the same).
                let direct = try await api.call(method, url, body: body)
                var sub: [(key: String, value: JSONValue)] = [("id", .string("x")), ("method", .string(method.rawValue)), ("url", .string(url))]
                if let body { sub.append(("body", try JSONParser.parse(body))) }
                let grouped = try await api.call(.post, "/api/v1/group", body: JSONWriter.encode(.object([("requests", .array([.object(sub)]))])))
                let expectedBody = direct.body.isEmpty ? "null" : direct.body
                let etag = direct.headers[.eTag].map { #","headers":{"ETag":\#(JSONWriter.encode(.string($0)))}"# } ?? ""
                #expect(
                    grouped.body == #"{"responses":[{"id":"x","status":\#(direct.status.code)\#(etag),"body":\#(expectedBody)}]}"#,
                    "\(method) \(url)")
            }
        }
    }

    @Test("a run of 20 GETs in one group answers each as its direct call (its deltas read ahead together on PostgreSQL)", arguments: Backend.allCases)
    func runSameBytes(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            // The first 20 (a group's most): every sync call, pages and item reads.
            let gets = try await Self.seededCalls(api).filter { $0.0 == .get }.map(\.1).prefix(20)
            var expected: [String] = []
            var requests: [JSONValue] = []
            for (index, url) in gets.enumerated() {
                let direct = try await api.call(.get, url)
                let etag = direct.headers[.eTag].map { #","headers":{"ETag":\#(JSONWriter.encode(.string($0)))}"# } ?? ""
                expected.append(#"{"id":"r\#(index)","status":\#(direct.status.code)\#(etag),"body":\#(direct.body.isEmpty ? "null" : direct.body)}"#)
                requests.append(.object([("id", .string("r\(index)")), ("method", .string("GET")), ("url", .string(url))]))
            }
            let grouped = try await api.call(.post, "/api/v1/group", body: JSONWriter.encode(.object([("requests", .array(requests))])))
            #expect(grouped.status == .ok)
            #expect(grouped.body == #"{"responses":["# + expected.joined(separator: ",") + "]}")
        }
    }

    /// Writes one item of every collection, and returns a call of every endpoint (some of them errors).
    static func seededCalls(_ api: APIClient) async throws -> [(HTTPRequest.Method, String, String?)] {
        _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Bob"}"#)
        _ = try await api.call(.put, "/api/v1/events/e1", body: #"{"title":"E","start":"2026-01-01T00:00:00Z"}"#)
        _ = try await api.call(.put, "/api/v1/places/p1", body: #"{"name":"Home"}"#)
        _ = try await api.call(.put, "/api/v1/threads/t1", body: #"{"title":"T"}"#)
        _ = try await api.call(.put, "/api/v1/threads/t1/messages/m1", body: #"{"text":"hi"}"#)
        _ = try await api.call(.put, "/api/v1/wall/w1", body: #"{"type":"text","text":"hello"}"#)
        _ = try await api.call(.put, "/api/v1/wall/w1/comments/k1", body: #"{"text":"hey"}"#)
        _ = try await api.call(.put, "/api/v1/members/m1", body: #"{"name":"Ann"}"#)
        let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
        // Changes after the date, so that the deltas carry rows and a tombstone.
        _ = try await api.call(.put, "/api/v1/contacts/c2", body: #"{"firstName":"Ann"}"#)
        _ = try await api.call(.put, "/api/v1/places/p2", body: #"{"name":"Work"}"#)
        _ = try await api.call(.put, "/api/v1/events/e2", body: #"{"title":"F","start":"2026-01-02T00:00:00Z"}"#)
        _ = try await api.call(.delete, "/api/v1/events/e2")
        _ = try await api.call(.put, "/api/v1/members/m2", body: #"{"name":"Joe"}"#)
        let calls: [(HTTPRequest.Method, String, String?)] = [
            (.get, "/api/v1/", nil), (.get, "/api/v1/ctcsync", nil), (.get, "/api/v1/ctcsync?date=\(date)", nil),
            (.get, "/api/v1/evtsync?date=\(date)", nil),
            (.get, "/api/v1/evtsync", nil), (.get, "/api/v1/plcsync?date=\(date)", nil), (.get, "/api/v1/msgsyncthread?nb=5", nil),
            (.get, "/api/v1/wallsync?types=text&maxcomments=1", nil), (.get, "/api/v1/familysync", nil),
            (.get, "/api/v1/familysync?date=\(date)", nil), (.get, "/api/v1/threads?lastId=t1", nil), (.get, "/api/v1/wall", nil),
            (.get, "/api/v1/threads/t1/messages", nil), (.get, "/api/v1/wall/w1/comments?nb=1", nil),
            (.get, "/api/v1/contacts/c1", nil), (.get, "/api/v1/events/e1", nil), (.get, "/api/v1/places/p1", nil),
            (.get, "/api/v1/threads/t1", nil), (.get, "/api/v1/threads/t1/messages/m1", nil), (.get, "/api/v1/wall/w1", nil),
            (.get, "/api/v1/wall/w1/comments/k1", nil), (.get, "/api/v1/members/m1", nil), (.get, "/api/v1/family", nil),
            (.get, "/api/v1/settings", nil), (.get, "/api/v1/contacts/missing", nil), (.get, "/api/v1/ctcsync?date=bad%20date", nil),
            (.get, "/api/v1/msgsyncthread?nb=0", nil), (.put, "/api/v1/contacts/c1", #"{"firstName":"Bob"}"#),
            (.put, "/api/v1/members/m1", #"{"name":"Ann"}"#), (.put, "/api/v1/settings", #"{"locale":"fr"}"#),
            (.put, "/api/v1/places/p1", #"{"name":""}"#), (.put, "/api/v1/wall/w1", #"{"type":"photo","text":"hello"}"#),
            (.delete, "/api/v1/places/none", nil), (.delete, "/api/v1/threads/none/messages/x", nil),
        ]
        return calls
    }
}
