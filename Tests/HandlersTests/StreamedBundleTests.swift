import HTTPTypes
import Handlers
import SyncAPI
import TestSupport
import Testing

/// A bundle endpoint (protocol §5) holds lists: built whole while its rows fit a delta's budget, streamed from a
/// snapshot past it, so that no dateless or forged-date bundle sync holds a large list whole in the server's memory.
@Suite("Streamed bundles", .sharingTheMachine)
struct StreamedBundleTests {
    /// A bundle with a family singleton, one list of long notes and an account singleton.
    static let model: DataModel = {
        let json = #"""
            {"model": "bulk", "collections": {
              "board": {"kind": "singleton", "scope": "family", "sync": "bulksync", "fields": {"name": {"type": "string"}}},
              "notes": {"kind": "list", "sync": "bulksync", "fields": {"text": {"type": "string", "maxLength": 900000}}},
              "prefs": {"kind": "singleton", "scope": "account", "sync": "bulksync",
                        "fields": {"units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"}}}}}
            """#
        return try! DataModel(json: Array(json.utf8))
    }()

    static func ids(_ json: JSONValue?, _ list: String, _ key: String = "updated") -> [String] {
        guard case .array(let items)? = json?[list]?[key] else { return [] }
        return items.compactMap { $0["id"]?.stringValue ?? $0.stringValue }
    }

    @Test("past a delta's budget: streamed, every row once, the same bytes with a forged date and in a group, 304", arguments: Backend.allCases)
    func streamedPastTheBudget(backend: Backend) async throws {
        try await TestApp.run(backend, configure: { $0.model = Self.model }) { client in
            let api = try await APIClient.signedUp(client)
            let small = try await api.call(.get, "/api/v1/bulksync")
            #expect(small.status == .ok && small.headers[.contentLength] != nil, "a small bundle is built whole")
            let before = try #require(small.json?["date"]?.stringValue)
            #expect(try await api.call(.put, "/api/v1/board", body: #"{"name":"B"}"#).status == .ok)
            // 6 notes of 800,000 characters: 4.8 MB, past the 4 MiB a delta holds.
            let text = String(repeating: "n", count: 800_000)
            for n in 0..<6 {
                #expect(try await api.call(.put, "/api/v1/notes/n\(n)", body: #"{"text":"\#(text)"}"#).status == .ok)
            }
            let whole = try await api.call(.get, "/api/v1/bulksync")
            #expect(whole.status == .ok)
            #expect(whole.headers[.contentLength] == nil, "streamed, so no length up front")
            let json = try #require(whole.json)
            let date = try #require(json["date"]?.stringValue)
            #expect(whole.headers[.eTag] == "\"\(date)\"")
            #expect(json["sync"] == .bool(false) && json["board"]?["name"] == .string("B") && json["prefs"]?["units"] == .string("metric"))
            #expect(Set(Self.ids(json, "notes")) == Set((0..<6).map { "n\($0)" }) && Self.ids(json, "notes").count == 6)
            #expect(Self.ids(json, "notes", "deleted").isEmpty && json["notes"]?["deleted"] == .array([]))
            #expect(Self.ids(json, "accounts").count == 1)
            guard case .array(let notes)? = json["notes"]?["updated"] else { throw TestFailure("no notes") }
            #expect(notes.allSatisfy { $0["text"] == .string(text) })
            // A date whose changes are past the budget answers the same, streamed.
            let forged = try await api.call(.get, "/api/v1/bulksync?date=\(before)")
            #expect(forged.headers[.contentLength] == nil && forged.body == whole.body)
            // Inside a group, from the group's snapshot: the same bytes.
            let group = try await api.call(.post, "/api/v1/group", body: #"{"requests":[{"id":"b","method":"GET","url":"/api/v1/bulksync"}]}"#)
            guard case .array(let responses)? = group.json?["responses"], let embedded = responses.first?["body"] else {
                throw TestFailure("no group answer: \(group.body.prefix(300))")
            }
            #expect(JSONWriter.encode(embedded) == JSONWriter.encode(json))
            // After a write of the same group the read goes to the primary, streamed the same way.
            let afterWrite = try await api.call(
                .post, "/api/v1/group",
                body:
                    #"{"requests":[{"id":"w","method":"PUT","url":"/api/v1/board","body":{"name":"C"}},{"id":"b","method":"GET","url":"/api/v1/bulksync"}]}"#
            )
            guard case .array(let answers)? = afterWrite.json?["responses"], answers.count == 2 else {
                throw TestFailure("no group answer: \(afterWrite.body.prefix(300))")
            }
            #expect(answers[1]["body"]?["board"]?["name"] == .string("C") && Self.ids(answers[1]["body"], "notes").count == 6)
            let current = try #require(answers[1]["body"]?["date"]?.stringValue)
            // 304 reads no rows.
            let same = try await api.call(.get, "/api/v1/bulksync", headers: [.ifNoneMatch: "\"\(current)\""])
            #expect(same.status == .notModified && same.body.isEmpty)
            // Back under the budget: built whole again, and the date of a streamed answer gives an exact delta.
            for n in 0..<5 { #expect(try await api.call(.delete, "/api/v1/notes/n\(n)").status == .noContent) }
            let delta = try await api.call(.get, "/api/v1/bulksync?date=\(current)")
            #expect(delta.headers[.contentLength] != nil && delta.json?["sync"] == .bool(true))
            #expect(Set(Self.ids(delta.json, "notes", "deleted")) == Set((0..<5).map { "n\($0)" }))
            let rest = try await api.call(.get, "/api/v1/bulksync")
            #expect(rest.headers[.contentLength] != nil && Self.ids(rest.json, "notes") == ["n5"])
        }
    }
}
