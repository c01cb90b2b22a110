import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
@_spi(StoreTesting) import SyncStorage
import TestSupport
import Testing

/// Protocol §15: "a space whose last member leaves is deleted with its data after the tombstone retention". Until then
/// nobody can join it (its invitations went when it emptied); after it, its items and its row are gone, and a space
/// that still has members is never touched.
@Suite("Spaces left empty", .sharingTheMachine)
struct EmptiedSpaceTests {
    @Test("a space whose last member's account is deleted accepts nobody, then goes with its data after the retention", arguments: Backend.allCases)
    func deletedAfterRetention(backend: Backend) async throws {
        try await MediaHTTPTests.withPurgeSetUp(backend) { setUp in
            let alice = setUp.api
            #expect(try await AccountManagementTests.addAccount(alice, "carol").status == .created)
            let carol = try await AccountManagementTests.login(setUp.client, "carol")
            let bob = try await APIClient.signedUp(setUp.client, username: "bob", family: "Jones")
            // Carol's own space, with a live item, a tombstone and an unused invitation.
            let garden = try #require(
                try await carol.call(.post, "/api/v1/spaces", body: #"{"name":"Garden"}"#).json?["id"]?.stringValue)
            for id in ["c1", "c2"] {
                #expect(try await carol.call(.put, "/api/v1/spaces/\(garden)/contacts/\(id)", body: #"{"firstName":"X"}"#).status == .ok)
            }
            #expect(try await carol.call(.delete, "/api/v1/spaces/\(garden)/contacts/c2").status == .noContent)
            let code = try await SpacesHTTPTests.invite(carol, garden, role: "member")
            let home = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let carolID = try #require(
                SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces/\(home)/members")).last?["accountId"]?.stringValue)

            // Carol deletes her account (the family's owner may not: she belongs to another space, security review H2):
            // the family keeps Alice, the garden is left empty.
            #expect(try await alice.call(.delete, "/api/v1/accounts/\(carolID)").status == .forbidden)
            #expect(try await carol.call(.delete, "/api/v1/accounts/\(carolID)").status == .noContent)
            // An empty space accepts nobody: its invitation answers as an unknown code.
            let accepted = try await SpacesHTTPTests.accept(bob, code)
            #expect(accepted.status == .notFound, "\(accepted.body)")

            let store = setUp.opened.store
            let retention = 3600
            let purger = TombstonePurger(store: store, retentionSeconds: retention, logger: setUp.logger)
            let now = WallClock.nowMs()
            // Within the retention, nothing goes.
            #expect(try await store.purgeEmptiedSpaces(cutoffMs: now - Int64(retention) * 1000) == 0)
            let kept = try await store.delta(spaceID: garden, collections: ["contacts"], since: 0).rows["contacts"] ?? []
            #expect(kept.count == 2, "\(kept)")
            // After it, the purge deletes the garden's items and its row (no account was made in it), and only that.
            _ = try await purger.purgeOnce(nowMs: now + 1000 + Int64(retention) * 1000)
            await #expect(throws: SyncError.self) { try await store.delta(spaceID: garden, collections: ["contacts"], since: nil) }
            #expect(try await store.purgeEmptiedSpaces(cutoffMs: now + 1000) == 0)
            #expect(try await alice.call(.get, "/api/v1/ctcsync").status == .ok)
            #expect(try await bob.call(.get, "/api/v1/ctcsync").status == .ok)
        }
    }
}
