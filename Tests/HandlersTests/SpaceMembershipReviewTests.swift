import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Security review M1, M4, L1, L2 and L4, over HTTP on both backends. M1: a member's private items go when it leaves the
/// space, is removed from it or is deleted, and give the space's quotas back. M4: only owners add logins, and the
/// space's member cap counts every member. L1: owner codes and role raises count the spaces an account owns. L2: two
/// owners demoting each other at once cannot both win. L4: memberships have paths of their own; `members/{id}` is the
/// `members` collection's item path in a model that has one, the old membership path in a model that has none.
@Suite("Memberships: private items, added logins, owned spaces, concurrent re-roles, their own paths", .sharingTheMachine)
struct SpaceMembershipReviewTests {
    /// A shared list and a list private to each account; no `members` collection.
    static let club = #"""
        {"model": "club", "collections": {
          "notes": {"kind": "list", "sync": "ntsync", "fields": {"text": {"type": "string", "maxLength": 100}}},
          "diary": {"kind": "list", "sync": "dysync", "scope": "account", "fields": {"text": {"type": "string", "maxLength": 100}}}
        }}
        """#

    /// PUTs `{at}/{collection}/{prefix}<n>` from `from` on until one is refused: how many were stored, and the refusal.
    static func fill(
        _ api: APIClient, _ at: String, _ collection: String, _ prefix: String, from: Int = 0
    ) async throws -> (stored: Int, refused: APIClient.Answer?) {
        for n in from..<from + 100 {
            let answer = try await api.call(.put, "\(at)/\(collection)/\(prefix)\(n)", body: #"{"text":"t\#(n)"}"#)
            if answer.status != .ok { return (n - from, answer) }
        }
        return (100, nil)
    }

    static func isQuotaExceeded(_ answer: APIClient.Answer?) -> Bool {
        answer?.status == .forbidden && answer?.json?["code"] == .string("quota_exceeded")
    }

    static func isForbidden(_ answer: APIClient.Answer) -> Bool {
        answer.status == .forbidden && answer.json?["code"] == .string("forbidden")
    }

    /// The members of `space` with `role`, by display name, as `GET /spaces/{space}/memberships` lists them.
    static func named(_ api: APIClient, _ space: String, role: String) async throws -> [String] {
        SpacesHTTPTests.array(try await api.call(.get, "/api/v1/spaces/\(space)/memberships"))
            .filter { $0["role"] == .string(role) }.compactMap { $0["displayName"]?.stringValue }.sorted()
    }

    @Test(
        "M1: a removed, leaving or deleted member's private items go with it, and the space it filled writes again",
        arguments: Backend.allCases)
    func privateItemsLeaveWithTheirAccount(backend: Backend) async throws {
        let model = try DataModel(json: Array(Self.club.utf8))
        let configure: (inout AppConfiguration) -> Void = { configuration in
            SpaceRemovalSecurityTests.rates(&configuration)
            QuotaTests.configure(&configuration) { $0.items = 10 }
            configuration.model = model
        }
        try await TestApp.run(backend, configure: configure) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Club")
            let mike = try await APIClient.signedUp(client, username: "mike", family: "Mike")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            #expect(try await SpacesHTTPTests.accept(mike, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let mikeID = try await SpaceRemovalSecurityTests.memberID(alice, space, "mike")

            // The review's attack: Mike fills the space with items nobody else sees; every write of the space is refused.
            let (share, full) = try await Self.fill(mike, at, "diary", "d")
            #expect(share > 0 && Self.isQuotaExceeded(full), "\(full?.body ?? "")")
            #expect(Self.isQuotaExceeded(try await alice.call(.put, "\(at)/notes/n0", body: #"{"text":"hi"}"#)))
            #expect(SpacesHTTPTests.ids(try await alice.call(.get, "\(at)/dysync").json?["updated"]) == [])

            // Removed, his items go with him: exactly his share of the space comes back.
            #expect(try await alice.call(.delete, "\(at)/memberships/\(mikeID)").status == .noContent)
            let (room, refused) = try await Self.fill(alice, at, "notes", "n")
            #expect(room == share && Self.isQuotaExceeded(refused), "\(room) of \(share): \(refused?.body ?? "")")
            for n in 0..<room { #expect(try await alice.call(.delete, "\(at)/notes/n\(n)").status == .noContent) }

            // Re-admitted, he finds no diary of his in the space: the items are gone, not hidden.
            #expect(try await SpacesHTTPTests.accept(mike, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let diary = try await mike.call(.get, "\(at)/dysync")
            #expect(diary.status == .ok && SpacesHTTPTests.ids(diary.json?["updated"]) == [], "\(diary.body)")
            #expect(try await mike.call(.get, "\(at)/diary/d0").status == .notFound)

            // Leaving by himself takes them too.
            #expect(try await Self.fill(mike, at, "diary", "e").stored == share)
            #expect(try await mike.call(.delete, "\(at)/memberships/\(mikeID)").status == .noContent)
            let afterLeave = try await Self.fill(alice, at, "notes", "n")
            #expect(afterLeave.stored == share && Self.isQuotaExceeded(afterLeave.refused), "\(afterLeave.stored) of \(share)")
            for n in 0..<afterLeave.stored { #expect(try await alice.call(.delete, "\(at)/notes/n\(n)").status == .noContent) }

            // Deleting his account takes his private items of every space: the club's and his own space's.
            #expect(try await SpacesHTTPTests.accept(mike, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            #expect(try await Self.fill(mike, at, "diary", "f").stored == share)
            #expect(try await mike.call(.put, "/api/v1/diary/own", body: #"{"text":"mine"}"#).status == .ok)
            let deleted = try await mike.call(.delete, "/api/v1/accounts/\(mikeID)")
            #expect(deleted.status == .noContent, "\(deleted.body)")
            let afterDelete = try await Self.fill(alice, at, "notes", "n")
            #expect(afterDelete.stored == share && Self.isQuotaExceeded(afterDelete.refused), "\(afterDelete.stored) of \(share)")
        }
    }

    @Test("M4: only an owner adds a login; the member cap counts every member of the space, however it joined", arguments: Backend.allCases)
    func addedLogins(backend: Backend) async throws {
        let configure: (inout AppConfiguration) -> Void = { configuration in
            SpaceRemovalSecurityTests.rates(&configuration)
            // `serve` sets both from `--max-accounts-per-family`.
            configuration.accounts.maxAccountsPerFamily = 4
            configuration.spaces.members = 4
        }
        try await TestApp.run(backend, configure: configure) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            // A login made in the space is a member there, and the space is its home: as a member, and as a reader, it
            // may not add logins of its own.
            #expect(try await AccountManagementTests.addAccount(alice, "kid").status == .created)
            let kid = try await AccountManagementTests.login(client, "kid")
            let kidID = try await SpaceRemovalSecurityTests.memberID(alice, space, "kid")
            let asMember = try await AccountManagementTests.addAccount(kid, "sock0")
            #expect(Self.isForbidden(asMember), "\(asMember.body)")
            #expect(try await alice.call(.put, "\(at)/memberships/\(kidID)", body: #"{"role":"reader"}"#).status == .ok)
            #expect(Self.isForbidden(try await AccountManagementTests.addAccount(kid, "sock0")))
            let noLogin = try await APIClient(client: client).call(.post, "/api/v1/login", body: #"{"username":"sock0","password":"password1"}"#)
            #expect(noLogin.status == .unauthorized, "\(noLogin.body)")
            // Raised to owner, it may.
            #expect(try await alice.call(.put, "\(at)/memberships/\(kidID)", body: #"{"role":"owner"}"#).status == .ok)
            #expect(try await AccountManagementTests.addAccount(kid, "sock0").status == .created)

            // Alice, the kid and sock0 were made in the space; Bob joins by invitation: four members, the cap. The
            // accounts made in the space are three, which the cap counted before.
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let over = try await AccountManagementTests.addAccount(alice, "sock1")
            #expect(Self.isQuotaExceeded(over), "\(over.status) \(over.body)")
            #expect(over.json?["detail"] == .string("A space holds at most 4 members."), "\(over.body)")
            #expect(SpacesHTTPTests.array(try await alice.call(.get, "\(at)/memberships")).count == 4)

            // A member removed makes room for one login, and no more.
            let bobID = try await SpaceRemovalSecurityTests.memberID(alice, space, "bob")
            #expect(try await alice.call(.delete, "\(at)/memberships/\(bobID)").status == .noContent)
            #expect(try await AccountManagementTests.addAccount(alice, "sock1").status == .created)
            #expect(Self.isQuotaExceeded(try await AccountManagementTests.addAccount(alice, "sock2")))
            // And the space's invitations see the logins: full, a code is refused.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            #expect(Self.isQuotaExceeded(try await SpacesHTTPTests.accept(carol, try await SpacesHTTPTests.invite(alice, space, role: "member"))))
        }
    }

    @Test("L1: an owner code and a raise to owner count the spaces the account owns, with the cap's own answer", arguments: Backend.allCases)
    func ownedSpacesCap(backend: Backend) async throws {
        let configure: (inout AppConfiguration) -> Void = { configuration in
            SpaceRemovalSecurityTests.rates(&configuration)
            configuration.spaces = SpaceLimits(owned: 2)
        }
        try await TestApp.run(backend, configure: configure) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            // Bob owns his family and one more space: his cap. A third space is refused; that answer is the cap's.
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            #expect(try await bob.call(.post, "/api/v1/spaces", body: #"{"name":"Second"}"#).status == .created)
            let third = try await bob.call(.post, "/api/v1/spaces", body: #"{"name":"Third"}"#)
            #expect(Self.isQuotaExceeded(third), "\(third.body)")
            let cap = try #require(third.json?["detail"])

            // An owner code is refused him the same way, and spends nothing; he is not in the space.
            let ownerCode = try await SpacesHTTPTests.invite(alice, space, role: "owner")
            let refused = try await SpacesHTTPTests.accept(bob, ownerCode)
            #expect(Self.isQuotaExceeded(refused) && refused.json?["detail"] == cap, "\(refused.body)")
            #expect(SpacesHTTPTests.array(try await bob.call(.get, "/api/v1/spaces")).count == 2)
            #expect(try await bob.call(.get, "\(at)/ctcsync").status == .notFound)

            // As a member he joins; raised to owner he is refused the same way, and stays a member.
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let bobID = try await SpaceRemovalSecurityTests.memberID(alice, space, "bob")
            let raised = try await alice.call(.put, "\(at)/memberships/\(bobID)", body: #"{"role":"owner"}"#)
            #expect(Self.isQuotaExceeded(raised) && raised.json?["detail"] == cap, "\(raised.body)")
            let patched = try await alice.call(.patch, "\(at)/memberships/\(bobID)", body: #"{"role":"owner"}"#)
            #expect(Self.isQuotaExceeded(patched), "\(patched.body)")
            #expect(try await Self.named(alice, space, role: "member") == ["bob"])
            #expect(try await bob.call(.put, "\(at)/contacts/c1", body: #"{"firstName":"Bo"}"#).status == .ok)

            // Below the cap both still work: Carol (one space) takes the owner code, Dave (one space) is raised.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let taken = try await SpacesHTTPTests.accept(carol, ownerCode)
            #expect(taken.status == .ok && taken.json?["role"] == .string("owner"), "\(taken.body)")
            let dave = try await APIClient.signedUp(client, username: "dave", family: "Green")
            #expect(try await SpacesHTTPTests.accept(dave, try await SpacesHTTPTests.invite(alice, space, role: "reader")).status == .ok)
            let daveID = try await SpaceRemovalSecurityTests.memberID(alice, space, "dave")
            let promoted = try await alice.call(.put, "\(at)/memberships/\(daveID)", body: #"{"role":"owner"}"#)
            #expect(promoted.status == .ok && promoted.json?["role"] == .string("owner"), "\(promoted.body)")
            // Now at his cap, Dave can create no space of his own.
            #expect(Self.isQuotaExceeded(try await dave.call(.post, "/api/v1/spaces", body: #"{"name":"Mine"}"#)))
            #expect(try await Self.named(alice, space, role: "owner") == ["alice", "carol", "dave"])
        }
    }

    @Test("L2: two owners demoting each other at once never both succeed, and an owner always remains", arguments: Backend.allCases)
    func concurrentDemotions(backend: Backend) async throws {
        try await TestApp.run(backend, configure: SpaceRemovalSecurityTests.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            for owner in [bob, carol] {
                #expect(try await SpacesHTTPTests.accept(owner, try await SpacesHTTPTests.invite(alice, space, role: "owner")).status == .ok)
            }
            let aliceID = try await SpaceRemovalSecurityTests.memberID(alice, space, "alice")
            let bobID = try await SpaceRemovalSecurityTests.memberID(alice, space, "bob")
            let carolID = try await SpaceRemovalSecurityTests.memberID(alice, space, "carol")
            let demote = #"{"role":"member"}"#
            // With a third owner (Carol), the last-owner rule cannot stop the second demotion: only the caller's role,
            // read again under the space's lock, does. Then with two owners alone.
            for third in [true, false] {
                if !third { #expect(try await carol.call(.delete, "\(at)/memberships/\(carolID)").status == .noContent) }
                for round in 0..<5 {
                    async let byAlice = alice.call(.put, "\(at)/memberships/\(bobID)", body: demote)
                    async let byBob = bob.call(.put, "\(at)/memberships/\(aliceID)", body: demote)
                    let statuses = [try await byAlice, try await byBob].map(\.status)
                    #expect(statuses.filter { $0 == .ok }.count == 1, "round \(round) (third owner: \(third)): \(statuses)")
                    #expect(statuses.allSatisfy { $0 == .ok || $0 == .forbidden || $0 == .conflict }, "round \(round): \(statuses)")
                    let owners = try await Self.named(alice, space, role: "owner")
                    #expect(owners.count == (third ? 2 : 1), "round \(round) (third owner: \(third)): owners \(owners)")
                    // The owner who won raises the other again, for the next round.
                    let (winner, loserID) = statuses[0] == .ok ? (alice, bobID) : (bob, aliceID)
                    #expect(try await winner.call(.put, "\(at)/memberships/\(loserID)", body: #"{"role":"owner"}"#).status == .ok)
                    #expect(try await Self.named(alice, space, role: "owner") == (third ? ["alice", "bob", "carol"] : ["alice", "bob"]))
                }
            }
        }
    }

    @Test(
        "L4: in the default model `members/{id}` is the members item alone; memberships change under `memberships/{accountId}`",
        arguments: Backend.allCases)
    func membershipPaths(backend: Backend) async throws {
        try await TestApp.run(backend, configure: SpaceRemovalSecurityTests.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let bobID = try await SpaceRemovalSecurityTests.memberID(alice, space, "bob")
            // Both lists answer the memberships.
            let listed = try await alice.call(.get, "\(at)/memberships")
            #expect(listed.status == .ok && SpacesHTTPTests.array(listed).count == 2, "\(listed.body)")
            #expect(try await alice.call(.get, "\(at)/members").body == listed.body)

            // The family's `members` item keyed by Bob's account id: written, read and deleted through the prefix, by
            // the owner and by Bob himself, and Bob stays a member all along (the review's case: 204, and Bob was gone).
            for writer in [alice, bob] {
                let written = try await writer.call(.put, "\(at)/members/\(bobID)", body: #"{"name":"Bob","role":"child"}"#)
                #expect(written.status == .ok && written.json?["name"] == .string("Bob"), "\(written.body)")
                #expect(try await alice.call(.get, "\(at)/members/\(bobID)").json?["role"] == .string("child"))
                #expect(try await writer.call(.delete, "\(at)/members/\(bobID)").status == .noContent)
                #expect(try await alice.call(.get, "\(at)/members/\(bobID)").status == .notFound)
                #expect(try await bob.call(.get, "\(at)/ctcsync").status == .ok)
                #expect(try await Self.named(alice, space, role: "member") == ["bob"])
            }
            // A role body there is an item body, refused as one; a DELETE there with no item is the item's idempotent
            // 204. The membership is untouched.
            let roleThere = try await alice.call(.put, "\(at)/members/\(bobID)", body: #"{"role":"reader"}"#)
            #expect(roleThere.status == .badRequest, "\(roleThere.body)")
            #expect(try await alice.call(.delete, "\(at)/members/\(bobID)").status == .noContent)
            #expect(try await Self.named(alice, space, role: "member") == ["bob"])

            // The membership's own path: PUT and PATCH re-role, DELETE removes.
            let patched = try await alice.call(.patch, "\(at)/memberships/\(bobID)", body: #"{"role":"reader"}"#)
            #expect(patched.status == .ok && patched.json?["role"] == .string("reader"), "\(patched.body)")
            let put = try await alice.call(.put, "\(at)/memberships/\(bobID)", body: #"{"role":"member"}"#)
            #expect(put.status == .ok && put.json?["role"] == .string("member"), "\(put.body)")
            #expect(try await alice.call(.post, "\(at)/memberships/\(bobID)", body: "{}").status == .methodNotAllowed)
            #expect(try await alice.call(.delete, "\(at)/memberships/\(bobID)").status == .noContent)
            #expect(try await bob.call(.get, "\(at)/ctcsync").status == .notFound)
            #expect(SpacesHTTPTests.array(try await alice.call(.get, "\(at)/memberships")).count == 1)
            #expect(try await alice.call(.delete, "\(at)/memberships/\(bobID)").status == .notFound)
        }
    }

    @Test("L4: in a model without a `members` collection the old membership paths still work, beside the new ones", arguments: Backend.allCases)
    func oldPathsWithoutMembersCollection(backend: Backend) async throws {
        let model = try DataModel(json: Array(Self.club.utf8))
        let configure: (inout AppConfiguration) -> Void = { configuration in
            SpaceRemovalSecurityTests.rates(&configuration)
            configuration.model = model
        }
        try await TestApp.run(backend, configure: configure) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Club")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try await SpaceRemovalSecurityTests.home(alice)
            let at = "/api/v1/spaces/\(space)"
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "reader")).status == .ok)
            let bobID = try await SpaceRemovalSecurityTests.memberID(alice, space, "bob")
            let old = try await alice.call(.put, "\(at)/members/\(bobID)", body: #"{"role":"member"}"#)
            #expect(old.status == .ok && old.json?["role"] == .string("member"), "\(old.body)")
            let new = try await alice.call(.put, "\(at)/memberships/\(bobID)", body: #"{"role":"reader"}"#)
            #expect(new.status == .ok && new.json?["role"] == .string("reader"), "\(new.body)")
            #expect(try await alice.call(.delete, "\(at)/members/\(bobID)").status == .noContent)
            #expect(try await bob.call(.get, "\(at)/ntsync").status == .notFound)
        }
    }
}
