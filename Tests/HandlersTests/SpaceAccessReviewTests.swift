import Crypto
import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Security review M2, M3 and L3, over HTTP on both backends, with the review's collections: `boards` (paginated,
/// `read: member`) whose child `pins` has default access, and `visits` (paginated, default access) whose child `findings`
/// is `read: member`, `write: author`. M2: readers upload no media. M3: a child is read only by who reads its parent
/// too, and parents carry no children to a caller that may not read them. L3: deleting a parent by a member does not
/// delete other authors' `write: author` children; an owner's delete still cascades.
@Suite("Space access: media uploads, children under their parent, cascade deletes", .sharingTheMachine)
struct SpaceAccessReviewTests {
    static let model = #"""
        {"model": "sec", "collections": {
          "notes": {"kind": "list", "sync": "ntsync", "fields": {"text": {"type": "string", "maxLength": 100}}},
          "boards": {"kind": "paginated", "sync": "brdsync", "order": "created", "children": "pins", "access": {"read": "member"},
                     "fields": {"name": {"type": "string", "maxLength": 100}}},
          "pins": {"kind": "child", "parent": "boards", "fields": {"note": {"type": "string", "maxLength": 100}}},
          "visits": {"kind": "paginated", "sync": "vstsync", "order": "created", "children": "findings",
                     "fields": {"place": {"type": "string", "maxLength": 100}}},
          "findings": {"kind": "child", "parent": "visits", "authored": true, "access": {"read": "member", "write": "author"},
                       "fields": {"text": {"type": "string", "maxLength": 100}}}
        }}
        """#

    /// Alice's space, with Bob and Dave its members and Carol its reader.
    struct Cast {
        let alice: APIClient
        let bob: APIClient
        let dave: APIClient
        let carol: APIClient
        let space: String
        /// `/api/v1/spaces/{space}`.
        var at: String { "/api/v1/spaces/\(space)" }
    }

    static func cast(_ client: any TestClientProtocol) async throws -> Cast {
        let alice = try await APIClient.signedUp(client, username: "alice", family: "Club")
        let space = try await SpaceRemovalSecurityTests.home(alice)
        var joined: [String: APIClient] = [:]
        for (name, role) in [("bob", "member"), ("dave", "member"), ("carol", "reader")] {
            let account = try await APIClient.signedUp(client, username: name, family: name)
            let accepted = try await SpacesHTTPTests.accept(account, try await SpacesHTTPTests.invite(alice, space, role: role))
            guard accepted.status == .ok else { throw TestFailure("\(name) joins: \(accepted.status) \(accepted.body)") }
            joined[name] = account
        }
        guard let bob = joined["bob"], let dave = joined["dave"], let carol = joined["carol"] else { throw TestFailure("\(joined.keys)") }
        return Cast(alice: alice, bob: bob, dave: dave, carol: carol, space: space)
    }

    static func run(_ backend: Backend, _ body: @escaping @Sendable (Cast) async throws -> Void) async throws {
        let model = try DataModel(json: Array(Self.model.utf8))
        try await TestApp.run(
            backend,
            configure: { configuration in
                SpaceRemovalSecurityTests.rates(&configuration)
                configuration.model = model
            }
        ) { client in
            try await body(try await Self.cast(client))
        }
    }

    static func isForbidden(_ answer: APIClient.Answer) -> Bool {
        answer.status == .forbidden && answer.json?["code"] == .string("forbidden")
    }

    static func array(_ value: JSONValue?) -> [JSONValue] {
        if case .array(let values)? = value { return values }
        return []
    }

    /// The embedded children of each parent of `items`, by parent id: their ids and the parent's `nomore`.
    static func children(_ items: JSONValue?, _ name: String) -> [String: (ids: [String], nomore: JSONValue?)] {
        var out: [String: (ids: [String], nomore: JSONValue?)] = [:]
        for item in array(items) {
            guard let id = item["id"]?.stringValue else { continue }
            out[id] = (array(item[name]).compactMap { $0["id"]?.stringValue }, item["nomore"])
        }
        return out
    }

    @Test("M2: a reader's upload is refused before anything is stored, a repeat of a member's bytes too", arguments: Backend.allCases)
    func readersUploadNoMedia(backend: Backend) async throws {
        try await Self.run(backend) { cast in
            let bytes = MediaHTTPTests.jpeg(2_000, seed: 7)
            let sha = Hex.lowercase(SHA256.hash(data: Data(bytes)))
            func upload(_ api: APIClient) async throws -> APIClient.Answer {
                try await api.call(.post, "\(cast.at)/media", bytes: bytes, headers: [.contentType: "image/jpeg"])
            }
            let refused = try await upload(cast.carol)
            #expect(Self.isForbidden(refused), "\(refused.status) \(refused.body)")
            #expect(refused.json?["detail"] == .string("A reader of this space may not upload media."), "\(refused.body)")
            // Nothing of the reader's bytes was kept: the space has no such medium.
            #expect(try await cast.alice.call(.get, "\(cast.at)/media/\(sha)").status == .notFound)
            // Refused before its type is looked at, as before its body.
            let wrongType = try await cast.carol.call(.post, "\(cast.at)/media", bytes: bytes, headers: [.contentType: "text/plain"])
            #expect(Self.isForbidden(wrongType), "\(wrongType.status) \(wrongType.body)")

            // A member uploads; the same bytes from the reader are refused (no refresh of what a member stored).
            let stored = try await upload(cast.bob)
            #expect(stored.status == .created && stored.json?["sha256"] == .string(sha), "\(stored.body)")
            #expect(Self.isForbidden(try await upload(cast.carol)))
            // Readers still read the space's media.
            let read = try await cast.carol.call(.get, "\(cast.at)/media/\(sha)")
            #expect(read.status == .ok && read.byteCount == bytes.count)
            #expect(try await upload(cast.alice).status == .created)
        }
    }

    @Test("M3: a members-only parent's children are refused to readers on their own routes, without a parent oracle", arguments: Backend.allCases)
    func childrenOfAMembersOnlyParent(backend: Backend) async throws {
        try await Self.run(backend) { cast in
            let at = cast.at
            #expect(try await cast.bob.call(.put, "\(at)/boards/b1", body: #"{"name":"members only"}"#).status == .ok)
            #expect(try await cast.bob.call(.put, "\(at)/boards/b1/pins/p1", body: #"{"note":"secret pin"}"#).status == .ok)
            #expect(Self.isForbidden(try await cast.carol.call(.get, "\(at)/brdsync")))
            for path in ["\(at)/boards/b1/pins", "\(at)/boards/b1/pins/p1", "\(at)/boards/nope/pins", "\(at)/boards/nope/pins/p1"] {
                let answer = try await cast.carol.call(.get, path)
                #expect(Self.isForbidden(answer), "\(path): \(answer.status) \(answer.body)")
                #expect(answer.json?["detail"] == .string("A reader of this space may not read boards."), "\(path): \(answer.body)")
                #expect(!answer.body.contains("secret"), "\(path): \(answer.body)")
            }
            // Members read both, as before.
            let pins = try await cast.dave.call(.get, "\(at)/boards/b1/pins")
            #expect(pins.status == .ok && SpacesHTTPTests.ids(pins.json?["items"]) == ["p1"], "\(pins.body)")
            #expect(try await cast.dave.call(.get, "\(at)/boards/b1/pins/p1").json?["note"] == .string("secret pin"))
            #expect(try await cast.dave.call(.get, "\(at)/boards/nope/pins").status == .notFound)
        }
    }

    @Test("M3: a reader's paginated sync and pages carry no members-only children; a member's carry them", arguments: Backend.allCases)
    func parentsCarryOnlyReadableChildren(backend: Backend) async throws {
        try await Self.run(backend) { cast in
            let at = cast.at
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1", body: #"{"place":"roof"}"#).status == .ok)
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1/findings/f1", body: #"{"text":"members-only finding"}"#).status == .ok)
            #expect(try await cast.bob.call(.put, "\(at)/visits/v2", body: #"{"place":"cellar"}"#).status == .ok)
            #expect(Self.isForbidden(try await cast.carol.call(.get, "\(at)/visits/v1/findings")))
            #expect(Self.isForbidden(try await cast.carol.call(.get, "\(at)/visits/v1/findings/f1")))

            // The reader: every visit, each with no findings and nothing more to get.
            let sync = try await cast.carol.call(.get, "\(at)/vstsync")
            #expect(sync.status == .ok && SpacesHTTPTests.ids(sync.json?["updated"]) == ["v1", "v2"], "\(sync.body)")
            #expect(!sync.body.contains("members-only"), "\(sync.body)")
            for (id, embedded) in Self.children(sync.json?["updated"], "findings") {
                #expect(embedded.ids.isEmpty && embedded.nomore == .bool(true), "\(id): \(sync.body)")
            }
            let page = try await cast.carol.call(.get, "\(at)/visits")
            #expect(page.status == .ok && SpacesHTTPTests.ids(page.json?["items"]) == ["v1", "v2"], "\(page.body)")
            #expect(!page.body.contains("members-only"), "\(page.body)")
            #expect(Self.children(page.json?["items"], "findings").values.allSatisfy { $0.ids.isEmpty && $0.nomore == .bool(true) })
            let below = try await cast.carol.call(.get, "\(at)/visits?lastId=v2")
            #expect(below.status == .ok && SpacesHTTPTests.ids(below.json?["items"]) == ["v1"] && !below.body.contains("members-only"))

            // A finding added later changes its visit: the reader's delta carries the visit, still without it.
            let date = try #require(sync.json?["date"]?.stringValue)
            #expect(try await cast.dave.call(.put, "\(at)/visits/v1/findings/f2", body: #"{"text":"members-only too"}"#).status == .ok)
            let delta = try await cast.carol.call(.get, "\(at)/vstsync?date=\(date)&lastId=v1")
            #expect(delta.json?["sync"] == .bool(true) && SpacesHTTPTests.ids(delta.json?["updated"]) == ["v1"], "\(delta.body)")
            #expect(!delta.body.contains("members-only"), "\(delta.body)")
            #expect(Self.children(delta.json?["updated"], "findings")["v1"]?.ids == [], "\(delta.body)")

            // A member's answers are as before: the findings, newest first.
            let full = try await cast.bob.call(.get, "\(at)/vstsync")
            #expect(Self.children(full.json?["updated"], "findings")["v1"]?.ids == ["f2", "f1"], "\(full.body)")
            #expect(Self.children(full.json?["updated"], "findings")["v1"]?.nomore == .bool(true), "\(full.body)")
            let memberPage = try await cast.dave.call(.get, "\(at)/visits")
            #expect(Self.children(memberPage.json?["items"], "findings")["v1"]?.ids == ["f2", "f1"], "\(memberPage.body)")
            // `/verify` digests parents alone, the same for both.
            let readerVerify = try await cast.carol.call(.get, "\(at)/verify?visitsLastId=v1")
            let memberVerify = try await cast.bob.call(.get, "\(at)/verify?visitsLastId=v1")
            #expect(readerVerify.json?["lists"]?["visits"]?["count"] == .number(2), "\(readerVerify.body)")
            #expect(readerVerify.json?["lists"]?["visits"] == memberVerify.json?["lists"]?["visits"])
        }
    }

    @Test(
        "a role change starts the account's dates over: a reader made member gets the findings its old date never carried",
        arguments: Backend.allCases)
    func roleChangeResetsDates(backend: Backend) async throws {
        try await Self.run(backend) { cast in
            let at = cast.at
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1", body: #"{"place":"roof"}"#).status == .ok)
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1/findings/f1", body: #"{"text":"members-only finding"}"#).status == .ok)
            let sync = try await cast.carol.call(.get, "\(at)/vstsync")
            #expect(Self.children(sync.json?["updated"], "findings")["v1"]?.ids == [], "\(sync.body)")
            let date = try #require(sync.json?["date"]?.stringValue)
            let carol = try await SpaceRemovalSecurityTests.memberID(cast.alice, cast.space, "carol")
            #expect(try await cast.alice.call(.put, "\(at)/memberships/\(carol)", body: #"{"role":"member"}"#).status == .ok)
            // Nothing of the visits moved, yet the delta would have been empty: the old date is answered in full.
            let after = try await cast.carol.call(.get, "\(at)/vstsync?date=\(date)")
            #expect(after.json?["sync"] == .bool(false), "\(after.body)")
            #expect(Self.children(after.json?["updated"], "findings")["v1"]?.ids == ["f1"], "\(after.body)")
            // A date issued after the change is answered as a delta again.
            let next = try #require(after.json?["date"]?.stringValue)
            #expect(try await cast.carol.call(.get, "\(at)/vstsync?date=\(next)").json?["sync"] == .bool(true))
        }
    }

    @Test("L3: a member's delete of a visit holding another author's finding is refused; an owner's cascades", arguments: Backend.allCases)
    func cascadeRespectsAuthors(backend: Backend) async throws {
        try await Self.run(backend) { cast in
            let at = cast.at
            for visit in ["v1", "v2", "v3", "v4"] {
                #expect(try await cast.bob.call(.put, "\(at)/visits/\(visit)", body: #"{"place":"\#(visit)"}"#).status == .ok)
            }
            // v1: Dave's finding under Bob's visit, among Bob's own.
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1/findings/b1", body: #"{"text":"bob's"}"#).status == .ok)
            #expect(try await cast.dave.call(.put, "\(at)/visits/v1/findings/d1", body: #"{"text":"dave's"}"#).status == .ok)
            #expect(try await cast.bob.call(.put, "\(at)/visits/v1/findings/b2", body: #"{"text":"bob's"}"#).status == .ok)
            // Bob may not delete Dave's finding, one by one or through its visit.
            #expect(Self.isForbidden(try await cast.bob.call(.delete, "\(at)/visits/v1/findings/d1")))
            let refused = try await cast.bob.call(.delete, "\(at)/visits/v1")
            #expect(Self.isForbidden(refused), "\(refused.status) \(refused.body)")
            #expect(
                refused.json?["detail"] == .string("Only an owner deletes an item of visits that holds findings of other authors."),
                "\(refused.body)")
            #expect(try await cast.alice.call(.get, "\(at)/visits/v1").status == .ok)
            #expect(try await cast.alice.call(.get, "\(at)/visits/v1/findings/d1").json?["text"] == .string("dave's"))
            #expect(SpacesHTTPTests.ids(try await cast.alice.call(.get, "\(at)/visits/v1/findings").json?["items"]) == ["b1", "b2", "d1"])
            // Nor through a group.
            let group = try await cast.bob.call(
                .post, "/api/v1/group", body: #"{"requests":[{"id":"d","method":"DELETE","url":"\#(at)/visits/v1"}]}"#)
            #expect(SpacesHTTPTests.statuses(group) == [.number(403)], "\(group.body)")

            // v2: Bob's findings alone, v3: none; Bob deletes both.
            #expect(try await cast.bob.call(.put, "\(at)/visits/v2/findings/b3", body: #"{"text":"bob's"}"#).status == .ok)
            #expect(try await cast.bob.call(.delete, "\(at)/visits/v2").status == .noContent)
            #expect(try await cast.bob.call(.get, "\(at)/visits/v2/findings/b3").status == .notFound)
            #expect(try await cast.bob.call(.delete, "\(at)/visits/v3").status == .noContent)
            // v4: Dave's finding, deleted by Dave first: nothing of another author is left, so Bob deletes the visit.
            #expect(try await cast.dave.call(.put, "\(at)/visits/v4/findings/d4", body: #"{"text":"dave's"}"#).status == .ok)
            #expect(Self.isForbidden(try await cast.bob.call(.delete, "\(at)/visits/v4")))
            #expect(try await cast.dave.call(.delete, "\(at)/visits/v4/findings/d4").status == .noContent)
            #expect(try await cast.bob.call(.delete, "\(at)/visits/v4").status == .noContent)

            // The owner cascades: the visit and every finding go, Dave's included.
            #expect(try await cast.alice.call(.delete, "\(at)/visits/v1").status == .noContent)
            #expect(try await cast.alice.call(.get, "\(at)/visits/v1").status == .notFound)
            #expect(try await cast.dave.call(.get, "\(at)/visits/v1/findings/d1").status == .notFound)
            #expect(SpacesHTTPTests.ids(try await cast.alice.call(.get, "\(at)/vstsync").json?["updated"]) == [])
        }
    }
}
