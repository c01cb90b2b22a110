import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Protocol §15 permissions from the model file: `access.read`, `access.write` (a role or `author`), checked on every
/// read and write of a space, on both backends; a refused sub-request of a group is refused alone.
@Suite("Space permissions over HTTP", .sharingTheMachine)
struct SpacePermissionsHTTPTests {
    static let model = #"""
        {"model": "club", "collections": {
          "notes": {"kind": "list", "sync": "ntsync", "fields": {"text": {"type": "string", "maxLength": 100}}},
          "rules": {"kind": "list", "sync": "rlsync", "access": {"write": "owner"}, "fields": {"text": {"type": "string", "maxLength": 100}}},
          "posts": {"kind": "list", "sync": "pstsync", "authored": true, "access": {"write": "author"},
                    "fields": {"text": {"type": "string", "maxLength": 100}}},
          "secrets": {"kind": "list", "sync": "scsync", "access": {"read": "member"}, "fields": {"text": {"type": "string", "maxLength": 100}}},
          "diary": {"kind": "list", "sync": "dysync", "scope": "account", "fields": {"text": {"type": "string", "maxLength": 100}}}
        }}
        """#

    @Test(
        "readers read, members write, owners write owner lists, authors keep their items, members-only lists stay hidden", arguments: Backend.allCases
    )
    func permissions(backend: Backend) async throws {
        let model = try DataModel(json: Array(Self.model.utf8))
        try await TestApp.run(backend, configure: { $0.model = model }) { client in
            let alice = try await APIClient.signedUp(client)
            let space = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            var joined: [String: APIClient] = [:]
            for (name, role) in [("bob", "member"), ("dave", "member"), ("carol", "reader")] {
                let account = try await APIClient.signedUp(client, username: name, family: name)
                #expect(try await SpacesHTTPTests.accept(account, try await SpacesHTTPTests.invite(alice, space, role: role)).status == .ok)
                joined[name] = account
            }
            let (bob, dave, carol) = (try #require(joined["bob"]), try #require(joined["dave"]), try #require(joined["carol"]))
            let at = "/api/v1/spaces/\(space)"
            let text = #"{"text":"hi"}"#
            func expectRefused(_ answer: APIClient.Answer, _ what: String) {
                #expect(answer.status == .forbidden && answer.json?["code"] == .string("forbidden"), "\(what): \(answer.status) \(answer.body)")
            }

            // Default access: readers read, members write.
            expectRefused(try await carol.call(.put, "\(at)/notes/n1", body: text), "a reader writes")
            #expect(try await bob.call(.put, "\(at)/notes/n1", body: text).status == .ok)
            #expect(try await carol.call(.get, "\(at)/notes/n1").status == .ok)
            // `write: owner`.
            expectRefused(try await bob.call(.put, "\(at)/rules/r1", body: text), "a member writes an owners' list")
            #expect(try await alice.call(.put, "/api/v1/rules/r1", body: text).status == .ok)
            #expect(SpacesHTTPTests.ids(try await carol.call(.get, "\(at)/rlsync").json?["updated"]) == ["r1"])
            // `write: author`: any member creates; only the author or an owner changes or deletes.
            #expect(try await bob.call(.put, "\(at)/posts/p1", body: text).status == .ok)
            expectRefused(try await dave.call(.put, "\(at)/posts/p1", body: #"{"text":"mine now"}"#), "another member replaces")
            expectRefused(try await dave.call(.patch, "\(at)/posts/p1", body: #"{"text":"mine now"}"#), "another member patches")
            expectRefused(try await dave.call(.delete, "\(at)/posts/p1"), "another member deletes")
            #expect(try await bob.call(.patch, "\(at)/posts/p1", body: #"{"text":"edited"}"#).status == .ok)
            #expect(try await alice.call(.patch, "/api/v1/posts/p1", body: #"{"text":"moderated"}"#).status == .ok)
            let post = try await dave.call(.get, "\(at)/posts/p1")
            #expect(post.json?["text"] == .string("moderated") && post.json?["author"] != .string(""), "\(post.body)")
            #expect(try await dave.call(.put, "\(at)/posts/p2", body: text).status == .ok)
            #expect(try await bob.call(.delete, "\(at)/posts/p1").status == .noContent)
            // `read: member`: hidden from readers everywhere, verify included.
            #expect(try await bob.call(.put, "\(at)/secrets/s1", body: text).status == .ok)
            expectRefused(try await carol.call(.get, "\(at)/scsync"), "a reader syncs a members' list")
            expectRefused(try await carol.call(.get, "\(at)/secrets/s1"), "a reader reads a members' item")
            #expect(try await bob.call(.get, "\(at)/scsync").status == .ok)
            let verified = try await carol.call(.get, "\(at)/verify")
            #expect(
                verified.status == .ok && verified.json?["lists"]?["secrets"] == nil && verified.json?["lists"]?["notes"] != nil, "\(verified.body)")
            // In a group, the refused sub-request alone.
            let group = try await carol.call(
                .post, "/api/v1/group",
                body: """
                    {"requests": [{"id":"n","method":"GET","url":"\(at)/ntsync"},{"id":"s","method":"GET","url":"\(at)/scsync"},
                     {"id":"w","method":"PUT","url":"\(at)/notes/n2","body":{"text":"x"}}]}
                    """)
            let statuses = SpacesHTTPTests.statuses(group)
            #expect(statuses == [.number(200), .number(403), .number(403)], "\(group.body)")
        }
    }

    @Test("a list private to each account: ids per account, never read, synced, counted or verified by another", arguments: Backend.allCases)
    func privateLists(backend: Backend) async throws {
        let model = try DataModel(json: Array(Self.model.utf8))
        try await TestApp.run(backend, configure: { $0.model = model }) { client in
            let alice = try await APIClient.signedUp(client)
            let space = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let at = "/api/v1/spaces/\(space)"
            // The same id, each account its own item.
            #expect(try await alice.call(.put, "/api/v1/diary/d1", body: #"{"text":"alice's"}"#).status == .ok)
            let date = try #require(try await bob.call(.get, "\(at)/dysync").json?["date"]?.stringValue)
            #expect(try await bob.call(.put, "\(at)/diary/d1", body: #"{"text":"bob's"}"#).status == .ok)
            #expect(try await alice.call(.get, "/api/v1/diary/d1").json?["text"] == .string("alice's"))
            #expect(try await bob.call(.get, "\(at)/diary/d1").json?["text"] == .string("bob's"))
            // Bob's sync holds his item only, and another account's writes never show in his delta.
            #expect(try await alice.call(.put, "/api/v1/diary/d2", body: #"{"text":"more"}"#).status == .ok)
            #expect(try await alice.call(.delete, "/api/v1/diary/d1").status == .noContent)
            let delta = try await bob.call(.get, "\(at)/dysync?date=\(date)")
            #expect(delta.json?["sync"] == .bool(true) && SpacesHTTPTests.ids(delta.json?["updated"]) == ["d1"], "\(delta.body)")
            #expect(delta.json?["deleted"] == .array([]), "\(delta.body)")
            #expect(SpacesHTTPTests.ids(try await alice.call(.get, "/api/v1/dysync").json?["updated"]) == ["d2"])
            #expect(try await bob.call(.get, "\(at)/diary/d2").status == .notFound)
            // Verify counts the caller's own items.
            #expect(try await bob.call(.get, "\(at)/verify").json?["lists"]?["diary"]?["count"] == .number(1))
            #expect(try await alice.call(.get, "/api/v1/verify").json?["lists"]?["diary"]?["count"] == .number(1))
        }
    }
}
