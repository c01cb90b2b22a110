import Crypto
import Foundation
import HTTPTypes
import SyncAPI
import TestSupport
import Testing

/// `GET /verify` (protocol §11): the digest a client computes from what it synced equals the server's.
@Suite("Verify", .sharingTheMachine)
struct VerifyHTTPTests {
    /// The digest of protocol §11 over `items` (id, NUL, modified, newline, sorted by id).
    static func digest(_ items: [JSONValue]) -> String {
        let pairs = items.compactMap { item -> (String, String)? in
            guard let id = item["id"]?.stringValue, let modified = item["modified"]?.stringValue else { return nil }
            return (id, modified)
        }.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        var hasher = SHA256()
        for (id, modified) in pairs { hasher.update(data: Array(id.utf8) + [0] + Array(modified.utf8) + [0x0A]) }
        return Hex.lowercase(hasher.finalize())
    }

    @Test("counts and digests match the synced lists; paginated lists cover the part at or above lastId", arguments: Backend.allCases)
    func verify(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            for n in 0..<5 { _ = try await api.call(.put, "/api/v1/contacts/c\(n)", body: #"{"firstName":"N\#(n)"}"#) }
            _ = try await api.call(.delete, "/api/v1/contacts/c2")
            for n in 0..<4 { _ = try await api.call(.put, "/api/v1/threads/t\(n)", body: #"{"title":"T\#(n)"}"#) }
            _ = try await api.call(.put, "/api/v1/wall/w1", body: #"{"type":"text","text":"hi"}"#)
            _ = try await api.call(.put, "/api/v1/wall/w2", body: #"{"type":"photo","mediaUrl":"https://example.org/a.jpg"}"#)
            let contacts = try #require(try await api.call(.get, "/api/v1/ctcsync").json)
            guard case .array(let items)? = contacts["updated"] else { throw TestFailure("no contacts") }
            let page = try #require(try await api.call(.get, "/api/v1/msgsyncthread?nb=2&maxmessages=0").json)
            guard case .array(let threads)? = page["updated"], let last = threads.last?["id"]?.stringValue else { throw TestFailure("no threads") }
            let answer = try #require(try await api.call(.get, "/api/v1/verify?threadsLastId=\(last)&wallLastId=w2&types=photo").json)
            #expect(answer["date"] == contacts["date"])
            #expect(answer["lists"]?["contacts"]?["count"] == .number(4))
            #expect(answer["lists"]?["contacts"]?["digest"] == .string(Self.digest(items)))
            #expect(answer["lists"]?["events"]?["count"] == .number(0))
            #expect(answer["lists"]?["threads"]?["count"] == .number(2))
            #expect(answer["lists"]?["threads"]?["digest"] == .string(Self.digest(threads)))
            #expect(answer["lists"]?["wall"]?["count"] == .number(1))
            // Without lastId the paginated lists are left out; an unknown one is 404.
            let bare = try #require(try await api.call(.get, "/api/v1/verify").json)
            #expect(bare["lists"]?["threads"] == nil && bare["lists"]?["members"]?["count"] == .number(0))
            #expect(try await api.call(.get, "/api/v1/verify?threadsLastId=nope").status == .notFound)
            #expect(try await api.call(.get, "/api/v1/verify?nb=3").status == .badRequest)
            // Last in a group with the syncs: one snapshot, one date.
            let group = try #require(
                try await api.call(
                    .post, "/api/v1/group",
                    body: #"{"requests":[{"id":"c","method":"GET","url":"/api/v1/ctcsync"},{"id":"v","method":"GET","url":"/api/v1/verify"}]}"#
                ).json)
            guard case .array(let responses)? = group["responses"], responses.count == 2 else { throw TestFailure("group") }
            #expect(responses[0]["body"]?["date"] == responses[1]["body"]?["date"])
        }
    }
}
