import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Protocol §15 over HTTP: spaces created, shared by invitation, addressed under `/spaces/{spaceId}/`, members re-roled
/// and removed, on both backends; what a removed member, a reader and a stranger can no longer do.
@Suite("Spaces over HTTP", .sharingTheMachine)
struct SpacesHTTPTests {
    static func array(_ answer: APIClient.Answer) -> [JSONValue] {
        if case .array(let values)? = answer.json { return values }
        return []
    }

    static func invite(_ owner: APIClient, _ space: String, role: String, uses: Int = 1) async throws -> String {
        let answer = try await owner.call(.post, "/api/v1/spaces/\(space)/invitations", body: #"{"role":"\#(role)","uses":\#(uses)}"#)
        guard answer.status == .created, let code = answer.json?["code"]?.stringValue else {
            throw TestFailure("invitation: \(answer.status) \(answer.body)")
        }
        return code
    }

    static func accept(_ client: APIClient, _ code: String) async throws -> APIClient.Answer {
        try await client.call(.post, "/api/v1/invitations/accept", body: #"{"code":"\#(code)"}"#)
    }

    @Test("a space shared by invitation: prefixed paths, roles, last owner, strangers answered as for no space", arguments: Backend.allCases)
    func shared(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let home = try #require(Self.array(try await alice.call(.get, "/api/v1/spaces")).first)
            #expect(home["name"] == .string("Smith") && home["role"] == .string("owner") && home["home"] == .bool(true))

            let created = try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Groceries"}"#)
            #expect(created.status == .created && created.json?["role"] == .string("owner"), "\(created.body)")
            let space = try #require(created.json?["id"]?.stringValue)
            #expect(try await alice.call(.put, "/api/v1/spaces/\(space)/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            // The home space's paths are unchanged: the item is not there.
            #expect(try await alice.call(.get, "/api/v1/contacts/c1").status == .notFound)
            #expect(try await alice.call(.get, "/api/v1/spaces/\(space)/contacts/c1").status == .ok)

            // A stranger: every path of the space answers as for a space that does not exist.
            for path in ["contacts/c1", "ctcsync", "familysync", "members"] {
                let stranger = try await bob.call(.get, "/api/v1/spaces/\(space)/\(path)")
                let nowhere = try await bob.call(.get, "/api/v1/spaces/00000000-0000-0000-0000-000000000000/\(path)")
                #expect(stranger.status == .notFound && stranger.json?["code"] == .string("not_found"), "\(path)")
                #expect(stranger.body == nowhere.body, "\(path)")
            }
            #expect(try await bob.call(.post, "/api/v1/spaces/\(space)/invitations", body: #"{"role":"owner"}"#).status == .notFound)

            // Bob joins as a reader: he reads, he may not write.
            let code = try await Self.invite(alice, space, role: "reader")
            let joined = try await Self.accept(bob, code)
            #expect(joined.status == .ok && joined.json?["id"] == .string(space) && joined.json?["role"] == .string("reader"), "\(joined.body)")
            let read = try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync")
            #expect(read.status == .ok && Self.ids(read.json?["updated"]) == ["c1"], "\(read.body)")
            let refused = try await bob.call(.put, "/api/v1/spaces/\(space)/contacts/c2", body: #"{"firstName":"Bo"}"#)
            #expect(refused.status == .forbidden && refused.json?["code"] == .string("forbidden"), "\(refused.body)")
            #expect(try await bob.call(.put, "/api/v1/spaces/\(space)", body: #"{"name":"Mine"}"#).status == .forbidden)
            // The code is spent: one answer for unknown, used and expired codes.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let spent = try await Self.accept(carol, code)
            let unknown = try await Self.accept(carol, "not-a-code")
            #expect(spent.status == .notFound && spent.body == unknown.body)
            // His own home is still his unprefixed space.
            #expect(Self.ids(try await bob.call(.get, "/api/v1/ctcsync").json?["updated"]) == [])
            let bobs = Self.array(try await bob.call(.get, "/api/v1/spaces"))
            #expect(bobs.map { $0["home"] } == [.bool(true), .bool(false)] && bobs.map { $0["role"] } == [.string("owner"), .string("reader")])

            // Promoted, he writes; the members list shows both.
            let accounts = Self.array(try await alice.call(.get, "/api/v1/spaces/\(space)/members"))
            #expect(accounts.map { $0["role"] } == [.string("owner"), .string("reader")])
            let aliceID = try #require(accounts.first?["accountId"]?.stringValue)
            let bobID = try #require(accounts.last?["accountId"]?.stringValue)
            let promoted = try await alice.call(.put, "/api/v1/spaces/\(space)/memberships/\(bobID)", body: #"{"role":"member"}"#)
            #expect(promoted.status == .ok && promoted.json?["role"] == .string("member"), "\(promoted.body)")
            #expect(try await bob.call(.put, "/api/v1/spaces/\(space)/contacts/c2", body: #"{"firstName":"Bo"}"#).status == .ok)
            #expect(try await bob.call(.put, "/api/v1/spaces/\(space)/memberships/\(aliceID)", body: #"{"role":"reader"}"#).status == .forbidden)

            // The last owner neither leaves nor steps down.
            for answer in [
                try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(aliceID)"),
                try await alice.call(.put, "/api/v1/spaces/\(space)/memberships/\(aliceID)", body: #"{"role":"member"}"#),
            ] {
                #expect(answer.status == .conflict && answer.json?["code"] == .string("last_owner"), "\(answer.body)")
            }

            // A date names its space: Bob's date of the shared space, sent on his home, is a first sync there.
            let date = try #require(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync").json?["date"]?.stringValue)
            #expect(try await bob.call(.get, "/api/v1/ctcsync?date=\(date)").json?["sync"] == .bool(false))
            #expect(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync?date=\(date)").json?["sync"] == .bool(true))

            // Removed, his next call on the space is 404; re-invited, his old date is a first sync again.
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(bobID)").status == .noContent)
            #expect(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync?date=\(date)").status == .notFound)
            #expect(try await bob.call(.put, "/api/v1/spaces/\(space)/contacts/c3", body: #"{"firstName":"Cy"}"#).status == .notFound)
            #expect(try await Self.accept(bob, try await Self.invite(alice, space, role: "member")).status == .ok)
            let again = try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync?date=\(date)")
            #expect(again.json?["sync"] == .bool(false) && Self.ids(again.json?["updated"]) == ["c1", "c2"], "\(again.body)")

            // A group reaches each of the caller's spaces, and no other.
            let group = try await bob.call(
                .post, "/api/v1/group",
                body: """
                    {"requests": [{"id":"shared","method":"GET","url":"/api/v1/spaces/\(space)/ctcsync"},
                     {"id":"home","method":"GET","url":"/api/v1/ctcsync"},
                     {"id":"write","method":"PUT","url":"/api/v1/spaces/\(space)/contacts/c4","body":{"firstName":"Di"}},
                     {"id":"other","method":"GET","url":"/api/v1/spaces/\(try #require(home["id"]?.stringValue))/ctcsync"}]}
                    """)
            let statuses = SpacesHTTPTests.statuses(group)
            #expect(statuses == [.number(200), .number(200), .number(200), .number(404)], "\(group.body)")

            // Leaving: a member removes itself.
            #expect(try await bob.call(.delete, "/api/v1/spaces/\(space)/memberships/\(bobID)").status == .noContent)
            #expect(Self.array(try await bob.call(.get, "/api/v1/spaces")).count == 1)
        }
    }

    @Test("forged space ids, in paths and in a group's URLs, reach nothing of another space", arguments: Backend.allCases)
    func forged(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try #require(Self.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            #expect(try await alice.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            for path in ["/api/v1/spaces/\(space)/contacts/c1", "/api/v1/spaces/%2E%2E/contacts/c1", "/api/v1/spaces/a%2Fb/contacts/c1"] {
                let write = try await bob.call(.put, path, body: #"{"firstName":"Mallory"}"#)
                #expect(write.status == .notFound, "\(path): \(write.status) \(write.body)")
            }
            let group = try await bob.call(
                .post, "/api/v1/group",
                body: """
                    {"requests": [
                     {"id":"w","method":"PUT","url":"/api/v1/spaces/\(space)/contacts/c1","body":{"firstName":"Mallory"}},
                     {"id":"r","method":"GET","url":"/api/v1/spaces/\(space)/ctcsync"},
                     {"id":"d","method":"GET","url":"/api/v1/spaces/\(space)/../\(space)/ctcsync"},
                     {"id":"c","method":"GET","url":"/api/v1/spaces/\(space)/changes"},
                     {"id":"m","method":"GET","url":"/api/v1/spaces/\(space)/media/\(String(repeating: "a", count: 64))"}]}
                    """)
            let statuses = SpacesHTTPTests.statuses(group)
            #expect(statuses.prefix(3).allSatisfy { $0 == .number(404) || $0 == .number(400) }, "\(group.body)")
            #expect(statuses.suffix(2) == [.number(400), .number(400)], "a group never reaches a space's stream or media: \(group.body)")
            #expect(try await alice.call(.get, "/api/v1/contacts/c1").json?["firstName"] == .string("Ann"))
        }
    }

    @Test("invitation codes cannot be guessed: failures are counted per address and answer 429 past the limit", arguments: Backend.allCases)
    func guessing(backend: Backend) async throws {
        try await TestApp.run(backend, configure: { $0.loginRate = .init(burst: 1000, perMinute: 1000) }) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try #require(Self.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let code = try await Self.invite(alice, space, role: "member")
            var statuses: [HTTPResponse.Status] = []
            for n in 0..<31 { statuses.append(try await Self.accept(bob, "guess-\(n)").status) }
            #expect(statuses.dropLast().allSatisfy { $0 == .notFound } && statuses.last == .tooManyRequests, "\(statuses)")
            // Even the right code waits out the window from this address.
            let late = try await Self.accept(bob, code)
            #expect(late.status == .tooManyRequests && late.headers[.retryAfter] != nil)
        }
    }

    @Test(
        "quotas: an account owns at most N spaces and belongs to at most M; a space holds at most K members and L unused invitations",
        arguments: Backend.allCases)
    func limits(backend: Backend) async throws {
        try await TestApp.run(backend, configure: { $0.spaces = SpaceLimits(owned: 2, memberships: 3, members: 2, invitations: 2) }) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            // Alice owns her family: one more space, then 403.
            let second = try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Two"}"#)
            #expect(second.status == .created)
            let third = try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Three"}"#)
            #expect(third.status == .forbidden && third.json?["code"] == .string("quota_exceeded"), "\(third.body)")
            // Bob belongs to his family and joins two more; a fourth invitation is refused.
            let bobSecond = try #require(try await bob.call(.post, "/api/v1/spaces", body: #"{"name":"B2"}"#).json?["id"]?.stringValue)
            _ = bobSecond
            let aliceSpaces = Self.array(try await alice.call(.get, "/api/v1/spaces")).compactMap { $0["id"]?.stringValue }
            #expect(try await Self.accept(bob, try await Self.invite(alice, aliceSpaces[0], role: "member")).status == .ok)
            let over = try await Self.accept(bob, try await Self.invite(alice, aliceSpaces[1], role: "member"))
            #expect(over.status == .forbidden && over.json?["code"] == .string("quota_exceeded"), "\(over.body)")
            // Bad bodies are 400, never 500.
            for body in [#"{"name":""}"#, #"{"name":5}"#, "[]", #"{"name":"x","other":1}"#] {
                #expect(try await alice.call(.post, "/api/v1/spaces", body: body).status == .badRequest, "\(body)")
            }
            for body in [#"{"role":"admin"}"#, #"{"role":"member","uses":0}"#, #"{"role":"member","expiresIn":99999999}"#] {
                #expect(try await alice.call(.post, "/api/v1/spaces/\(aliceSpaces[0])/invitations", body: body).status == .badRequest, "\(body)")
            }
            // A space holds at most `members` accounts: Alice's home has two now.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let full = try await Self.accept(carol, try await Self.invite(alice, aliceSpaces[0], role: "member"))
            #expect(full.status == .forbidden && full.json?["code"] == .string("quota_exceeded"), "\(full.body)")
            // And keeps at most `invitations` unused ones: the refused accept above left one, plus one more.
            _ = try await Self.invite(alice, aliceSpaces[0], role: "reader")
            let tooMany = try await alice.call(.post, "/api/v1/spaces/\(aliceSpaces[0])/invitations", body: #"{"role":"reader"}"#)
            #expect(tooMany.status == .forbidden && tooMany.json?["code"] == .string("quota_exceeded"), "\(tooMany.body)")
        }
    }

    @Test("a removed member's cached session stops working on another instance, and its stream of the space ends")
    func removedEverywhere() async throws {
        try await LiveHubTests.twoInstances { one, two in
            let alice = try await APIClient.signedUp(one)
            let bobHere = try await APIClient.signedUp(one, username: "bob", family: "Jones")
            let space = try #require(Self.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            #expect(try await Self.accept(bobHere, try await Self.invite(alice, space, role: "member")).status == .ok)
            let bob = APIClient(client: two, token: bobHere.token)
            // Cached on the second instance.
            #expect(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync").status == .ok)
            let bobID = try #require(
                Self.array(try await alice.call(.get, "/api/v1/spaces/\(space)/members")).last?["accountId"]?.stringValue)
            // His stream of the space, on the second instance (a connection of its own: the test client's one
            // connection answers in order), runs until he is removed; curl gives up after 10 minutes (and fails the
            // test: a generous ceiling, not a measure).
            let port = try #require(two.port)
            async let stream = TestPostgres.run([
                "curl", "-s", "-N", "-m", "600", "-H", "Authorization: Bearer \(bobHere.token ?? "")",
                "http://127.0.0.1:\(port)/api/v1/spaces/\(space)/changes",
            ])
            try await HardeningHTTPTests.waitForStreams(two, count: 1)
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(bobID)").status == .noContent)
            // The stream ends with the membership (its maximum duration is an hour).
            let streamed = try await stream
            #expect(streamed.hasPrefix("retry: 2000"), "\(streamed.prefix(200))")
            // The second instance answers 404 once the revocation notice arrives (its cached session would last 60 s).
            // The stream above ended on that same notice, so the next call already sees it.
            let status = try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync").status
            #expect(status == .notFound)
        }
    }

    /// The statuses of a group's answers, in order.
    static func statuses(_ group: APIClient.Answer) -> [JSONValue?] {
        guard case .array(let answers)? = group.json?["responses"] else { return [] }
        return answers.map { $0["status"] }
    }

    static func ids(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { $0["id"]?.stringValue }.sorted()
    }
}
