import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Security review H1 and H2, over HTTP on both backends. H1: a removed member, owner included, no longer walks back in
/// with a code minted before its removal (its own codes go when it leaves, is removed or demoted; other codes of the
/// space refuse it), and owners list and revoke the live codes. H2: another account's `DELETE /accounts/{id}` deletes
/// only a non-owner login that belongs to the caller's space alone.
@Suite("Removed members, invitation codes, and who deletes whom", .sharingTheMachine)
struct SpaceRemovalSecurityTests {
    /// Room for the signups, logins and refused codes of one test.
    static func rates(_ configuration: inout AppConfiguration) {
        configuration.signupRate = .init(burst: 100, perMinute: 100)
        configuration.loginRate = .init(burst: 100, perMinute: 100)
    }

    static func home(_ api: APIClient) async throws -> String {
        guard let id = SpacesHTTPTests.array(try await api.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue else {
            throw TestFailure("no home space")
        }
        return id
    }

    /// The account id of the member of `space` named `name` (its display name, the username by default).
    static func memberID(_ api: APIClient, _ space: String, _ name: String) async throws -> String {
        let members = SpacesHTTPTests.array(try await api.call(.get, "/api/v1/spaces/\(space)/members"))
        guard let id = members.first(where: { $0["displayName"] == .string(name) })?["accountId"]?.stringValue else {
            throw TestFailure("no member \(name) in \(members)")
        }
        return id
    }

    /// `POST /spaces/{space}/invitations` with `body`: the code.
    static func mint(_ owner: APIClient, _ space: String, _ body: String) async throws -> String {
        let answer = try await owner.call(.post, "/api/v1/spaces/\(space)/invitations", body: body)
        guard answer.status == .created, let code = answer.json?["code"]?.stringValue else {
            throw TestFailure("invitation: \(answer.status) \(answer.body)")
        }
        return code
    }

    static func invitations(_ api: APIClient, _ space: String) async throws -> APIClient.Answer {
        try await api.call(.get, "/api/v1/spaces/\(space)/invitations")
    }

    /// The listed invitation whose id is the start of the code's hash.
    static func listed(_ answer: APIClient.Answer, code: String) -> JSONValue? {
        let id = String(BearerToken.storageHash(code).prefix(InvitationRecord.idLength))
        return SpacesHTTPTests.array(answer).first { $0["id"] == .string(id) }
    }

    @Test("the review's attack: a co-owner's owner code, kept past her demotion and removal, no longer lets her in", arguments: Backend.allCases)
    func removedOwnerCannotRejoin(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "fam-alice")
            let mallory = try await APIClient.signedUp(client, username: "mallory", family: "Mallory")
            let space = try await Self.home(alice)
            #expect(try await SpacesHTTPTests.accept(mallory, try await SpacesHTTPTests.invite(alice, space, role: "owner")).status == .ok)
            let aliceID = try await Self.memberID(alice, space, "alice")
            let malloryID = try await Self.memberID(alice, space, "mallory")

            // While a co-owner, Mallory mints an owner code and keeps it; Alice sees it, with its minter.
            let kept = try await Self.mint(mallory, space, #"{"role":"owner","uses":5,"expiresIn":2592000}"#)
            let listed = try #require(Self.listed(try await Self.invitations(alice, space), code: kept))
            #expect(listed["createdBy"] == .string(malloryID) && listed["role"] == .string("owner") && listed["usesLeft"] == .number(5))

            // Alice demotes, then removes her: the demotion already took Mallory's codes with it.
            let demoted = try await alice.call(.put, "/api/v1/spaces/\(space)/memberships/\(malloryID)", body: #"{"role":"reader"}"#)
            #expect(demoted.status == .ok, "\(demoted.body)")
            #expect(Self.listed(try await Self.invitations(alice, space), code: kept) == nil)
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(malloryID)").status == .noContent)
            #expect(try await mallory.call(.get, "/api/v1/spaces/\(space)/ctcsync").status == .notFound)

            // Her own old code: an unknown code now. She is not an owner again, and cannot remove Alice.
            let rejoin = try await SpacesHTTPTests.accept(mallory, kept)
            #expect(rejoin.status == .notFound && rejoin.json?["code"] == .string("not_found"), "\(rejoin.body)")
            #expect(try await mallory.call(.delete, "/api/v1/spaces/\(space)/memberships/\(aliceID)").status == .notFound)
            let aliceSpaces = SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces"))
            #expect(aliceSpaces.first?["id"] == .string(space) && aliceSpaces.first?["role"] == .string("owner"))
            #expect(try await alice.call(.get, "/api/v1/ctcsync").status == .ok)

            // A code minted after the removal re-admits her, with that code's role.
            let again = try await SpacesHTTPTests.accept(mallory, try await SpacesHTTPTests.invite(alice, space, role: "member"))
            #expect(again.status == .ok && again.json?["role"] == .string("member"), "\(again.body)")
            #expect(try await mallory.call(.get, "/api/v1/spaces/\(space)/ctcsync").status == .ok)
        }
    }

    @Test("a minter's codes go when it is removed as an owner, when it leaves, and with its account", arguments: Backend.allCases)
    func codesGoWithTheirMinter(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let space = try await Self.home(alice)
            let owners = [
                try await APIClient.signedUp(client, username: "ownerone", family: "One"),
                try await APIClient.signedUp(client, username: "ownertwo", family: "Two"),
                try await APIClient.signedUp(client, username: "ownerthree", family: "Three"),
            ]
            var codes: [String] = []
            for owner in owners {
                #expect(try await SpacesHTTPTests.accept(owner, try await SpacesHTTPTests.invite(alice, space, role: "owner")).status == .ok)
                codes.append(try await Self.mint(owner, space, #"{"role":"member","uses":3}"#))
            }
            let alicesCode = try await Self.mint(alice, space, #"{"role":"reader","uses":3}"#)
            #expect(SpacesHTTPTests.array(try await Self.invitations(alice, space)).count == 4)

            // Removed while still an owner; leaving; deleting its own account.
            let firstID = try await Self.memberID(alice, space, "ownerone")
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(firstID)").status == .noContent)
            let secondID = try await Self.memberID(alice, space, "ownertwo")
            #expect(try await owners[1].call(.delete, "/api/v1/spaces/\(space)/memberships/\(secondID)").status == .noContent)
            let thirdID = try await Self.memberID(alice, space, "ownerthree")
            let deleted = try await owners[2].call(.delete, "/api/v1/accounts/\(thirdID)")
            #expect(deleted.status == .noContent, "\(deleted.body)")

            // Only Alice's code is left, and the others answer as unknown codes.
            let left = try await Self.invitations(alice, space)
            #expect(SpacesHTTPTests.array(left).count == 1 && Self.listed(left, code: alicesCode) != nil, "\(left.body)")
            let stranger = try await APIClient.signedUp(client, username: "stranger", family: "Elsewhere")
            for code in codes {
                #expect(try await SpacesHTTPTests.accept(stranger, code).status == .notFound)
            }
        }
    }

    @Test("a removed member is refused a multi-use code shared before its removal; a new account still uses it", arguments: Backend.allCases)
    func sharedCodeRefusedToRemovedMember(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try await Self.home(alice)
            // Shared in the family chat: five uses.
            let shared = try await Self.mint(alice, space, #"{"role":"member","uses":5}"#)
            #expect(try await SpacesHTTPTests.accept(bob, shared).status == .ok)
            let bobID = try await Self.memberID(alice, space, "bob")
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(bobID)").status == .noContent)

            // Bob, removed after the code was made, may not use it; the refusal spends nothing.
            let refused = try await SpacesHTTPTests.accept(bob, shared)
            #expect(refused.status == .forbidden && refused.json?["code"] == .string("forbidden"), "\(refused.body)")
            #expect(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync").status == .notFound)
            #expect(Self.listed(try await Self.invitations(alice, space), code: shared)?["usesLeft"] == .number(4))

            // A new account joins with it.
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let joined = try await SpacesHTTPTests.accept(carol, shared)
            #expect(joined.status == .ok && joined.json?["role"] == .string("member"), "\(joined.body)")
            // A member who left by itself was not removed: the shared code admits it again.
            let carolID = try await Self.memberID(alice, space, "carol")
            #expect(try await carol.call(.delete, "/api/v1/spaces/\(space)/memberships/\(carolID)").status == .noContent)
            #expect(try await SpacesHTTPTests.accept(carol, shared).status == .ok)

            // An owner re-admits Bob with a code minted after the removal; the old one still refuses him meanwhile.
            let fresh = try await SpacesHTTPTests.invite(alice, space, role: "reader")
            #expect(try await SpacesHTTPTests.accept(bob, shared).status == .forbidden)
            let back = try await SpacesHTTPTests.accept(bob, fresh)
            #expect(back.status == .ok && back.json?["role"] == .string("reader"), "\(back.body)")
            #expect(try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync").status == .ok)
            // Now a member again, the old code answers his membership as for any member (and spends nothing).
            let member = try await SpacesHTTPTests.accept(bob, shared)
            #expect(member.status == .ok && member.json?["role"] == .string("reader"), "\(member.body)")
        }
    }

    @Test("owners list and revoke live codes; a revoked code is an unknown one; others get 403, strangers 404", arguments: Backend.allCases)
    func listAndRevoke(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let carol = try await APIClient.signedUp(client, username: "carol", family: "Brown")
            let dave = try await APIClient.signedUp(client, username: "dave", family: "Green")
            let space = try await Self.home(alice)
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            #expect(try await SpacesHTTPTests.accept(carol, try await SpacesHTTPTests.invite(alice, space, role: "reader")).status == .ok)
            let aliceID = try await Self.memberID(alice, space, "alice")

            // Two live codes (the used-up ones are not listed), each by an id; no code is ever shown.
            let first = try await Self.mint(alice, space, #"{"role":"member","uses":3}"#)
            let second = try await Self.mint(alice, space, #"{"role":"reader"}"#)
            let list = try await Self.invitations(alice, space)
            #expect(list.status == .ok && SpacesHTTPTests.array(list).count == 2, "\(list.body)")
            #expect(Self.listed(list, code: second)?["usesLeft"] == .number(1))
            let entry = try #require(Self.listed(list, code: first))
            #expect(entry["role"] == .string("member") && entry["usesLeft"] == .number(3) && entry["createdBy"] == .string(aliceID))
            #expect(entry["createdAt"]?.stringValue != nil && entry["expiresAt"]?.stringValue != nil && entry["code"] == nil)
            #expect(!list.body.contains(first) && !list.body.contains(second))
            let id = try #require(entry["id"]?.stringValue)

            // A member and a reader may neither list nor revoke; a stranger is answered as for no space.
            for other in [bob, carol] {
                let listing = try await Self.invitations(other, space)
                #expect(listing.status == .forbidden && listing.json?["code"] == .string("forbidden"), "\(listing.body)")
                let revoking = try await other.call(.delete, "/api/v1/spaces/\(space)/invitations/\(id)")
                #expect(revoking.status == .forbidden && revoking.json?["code"] == .string("forbidden"), "\(revoking.body)")
            }
            #expect(try await Self.invitations(dave, space).status == .notFound)
            #expect(try await dave.call(.delete, "/api/v1/spaces/\(space)/invitations/\(id)").status == .notFound)

            // Alice revokes the first: gone from the list, and accepting it answers exactly as an unknown code.
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/invitations/\(id)").status == .noContent)
            let after = try await Self.invitations(alice, space)
            #expect(SpacesHTTPTests.array(after).count == 1 && Self.listed(after, code: second) != nil, "\(after.body)")
            let revoked = try await SpacesHTTPTests.accept(dave, first)
            let unknown = try await SpacesHTTPTests.accept(dave, "not-a-code")
            #expect(revoked.status == .notFound && revoked.body == unknown.body, "\(revoked.body)")
            for missing in [id, "nonsense", String(repeating: "0", count: InvitationRecord.idLength)] {
                let answer = try await alice.call(.delete, "/api/v1/spaces/\(space)/invitations/\(missing)")
                #expect(answer.status == .notFound && answer.json?["code"] == .string("not_found"), "\(missing): \(answer.body)")
            }

            // A code of another space is not revoked through this one.
            let other = try #require(try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Other"}"#).json?["id"]?.stringValue)
            let elsewhere = try await Self.mint(alice, other, #"{"role":"member"}"#)
            let elsewhereID = try #require(Self.listed(try await Self.invitations(alice, other), code: elsewhere)?["id"]?.stringValue)
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/invitations/\(elsewhereID)").status == .notFound)
            #expect(try await SpacesHTTPTests.accept(dave, elsewhere).status == .ok)
            // The path takes GET (and HEAD), POST and DELETE on an id only.
            let put = try await alice.call(.put, "/api/v1/spaces/\(space)/invitations", body: "{}")
            #expect(put.status == .methodNotAllowed, "\(put.body)")
        }
    }

    @Test("another account's DELETE /accounts/{id} spares owners and accounts of other spaces; a kid's login still goes", arguments: Backend.allCases)
    func ownerDeletesOnlyLoginsOfTheSpace(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.rates) { client in
            let alice = try await APIClient.signedUp(client, username: "alice", family: "Smith")
            let space = try await Self.home(alice)
            for username in ["kid", "teen", "sam"] {
                #expect(try await AccountManagementTests.addAccount(alice, username).status == .created)
            }
            let kid = try await AccountManagementTests.login(client, "kid")
            let sam = try await AccountManagementTests.login(client, "sam")
            let aliceID = try await Self.memberID(alice, space, "alice")
            let kidID = try await Self.memberID(alice, space, "kid")
            let teenID = try await Self.memberID(alice, space, "teen")
            let samID = try await Self.memberID(alice, space, "sam")
            // Alice also keeps a space of her own, with data.
            let own = try #require(try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Private"}"#).json?["id"]?.stringValue)
            #expect(try await alice.call(.put, "/api/v1/spaces/\(own)/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)

            // The kid, raised to owner, may not delete Alice: 403, and Alice, her token and her space are untouched.
            #expect(try await alice.call(.put, "/api/v1/spaces/\(space)/memberships/\(kidID)", body: #"{"role":"owner"}"#).status == .ok)
            let refused = try await kid.call(.delete, "/api/v1/accounts/\(aliceID)")
            #expect(refused.status == .forbidden && refused.json?["code"] == .string("forbidden"), "\(refused.body)")
            #expect(refused.json?["detail"]?.stringValue?.contains("Only the account itself") == true, "\(refused.body)")
            let login = try await APIClient(client: client).call(
                .post, "/api/v1/login", body: #"{"username":"alice","password":"password1"}"#)
            #expect(login.status == .ok, "\(login.body)")
            #expect(try await alice.call(.get, "/api/v1/spaces/\(own)/contacts/c1").status == .ok)
            // Nor may Alice delete the kid while it owns the space.
            #expect(try await alice.call(.delete, "/api/v1/accounts/\(kidID)").status == .forbidden)

            // Sam, a plain member of the space that joined another space too: refused; removing him is the way.
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let jones = try await Self.home(bob)
            #expect(try await SpacesHTTPTests.accept(sam, try await SpacesHTTPTests.invite(bob, jones, role: "member")).status == .ok)
            let spared = try await alice.call(.delete, "/api/v1/accounts/\(samID)")
            #expect(spared.status == .forbidden && spared.json?["code"] == .string("forbidden"), "\(spared.body)")
            #expect(try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(samID)").status == .noContent)
            #expect(try await sam.call(.get, "/api/v1/spaces/\(jones)/ctcsync").status == .ok)

            // A plain member that belongs to this space alone is still deleted by an owner (the kid, now an owner, too).
            #expect(try await kid.call(.delete, "/api/v1/accounts/\(teenID)").status == .noContent)
            let teenLogin = try await APIClient(client: client).call(
                .post, "/api/v1/login", body: #"{"username":"teen","password":"password1"}"#)
            #expect(teenLogin.status == .unauthorized)
            // Made a member again, the kid's login is Alice's to delete.
            #expect(try await alice.call(.put, "/api/v1/spaces/\(space)/memberships/\(kidID)", body: #"{"role":"member"}"#).status == .ok)
            #expect(try await alice.call(.delete, "/api/v1/accounts/\(kidID)").status == .noContent)
            #expect(try await kid.call(.get, "/api/v1/ctcsync").status == .unauthorized)
        }
    }
}
