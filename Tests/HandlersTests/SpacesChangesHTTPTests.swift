import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// `GET /changes?spaces=all` (protocol §15): one stream tells an app when any of its spaces moves and when its
/// memberships change, on the instance that took the change and on another.
@Suite("Changes of all spaces", .sharingTheMachine)
struct SpacesChangesHTTPTests {
    typealias Event = EventStreamReader.Event

    static func spaces(_ list: [(String, String)]) -> Event {
        Event(name: "spaces", data: #"{"spaces":["# + list.map { #"{"id":"\#($0.0)","role":"\#($0.1)"}"# }.joined(separator: ",") + "]}")
    }

    static func change(_ space: String, _ date: String) -> Event {
        Event(name: "change", data: #"{"space":"\#(space)","date":"\#(date)"}"#)
    }

    static func date(_ api: APIClient, _ space: String) async throws -> String {
        try #require(try await api.call(.get, "/api/v1/spaces/\(space)/ctcsync").json?["date"]?.stringValue)
    }

    static func isChange(of space: String) -> @Sendable (Event) -> Bool {
        { $0.name == "change" && $0.data.contains(#""space":"\#(space)""#) }
    }

    static let isSpaces: @Sendable (Event) -> Bool = { $0.name == "spaces" }

    @Test("one stream: every space's current date at once, then each space that moves, each membership and role change", arguments: Backend.allCases)
    func allSpaces(backend: Backend) async throws {
        // Streams last an hour: every event below comes from what the test did.
        try await TestApp.run(backend, mode: .live, configure: { $0.changesMaxDuration = .seconds(3600) }) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let home = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let jones = try #require(SpacesHTTPTests.array(try await bob.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let port = try #require(client.port)
            let stream = try EventStreamReader(port: port, path: "/api/v1/changes?spaces=all", token: alice.token)
            defer { stream.disconnect() }

            // At once: the spaces, then each space's current date.
            #expect(
                try await stream.next(where: Self.isChange(of: home)) == [
                    Self.spaces([(home, "owner")]), Self.change(home, try await Self.date(alice, home)),
                ])
            #expect(stream.status.contains("200"))

            // A space created: listed, with its date.
            let groceries = try #require(
                try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Groceries"}"#).json?["id"]?.stringValue)
            #expect(
                try await stream.next(where: Self.isChange(of: groceries)) == [
                    Self.spaces([(home, "owner"), (groceries, "owner")]), Self.change(groceries, try await Self.date(alice, groceries)),
                ])
            // A write in one space: that space's new date, alone.
            #expect(try await alice.call(.put, "/api/v1/spaces/\(groceries)/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            #expect(try await stream.next(where: Self.isChange(of: groceries)) == [Self.change(groceries, try await Self.date(alice, groceries))])

            // Joined by invitation, re-roled, written to by another, removed.
            let code = try await SpacesHTTPTests.invite(bob, jones, role: "member")
            #expect(try await SpacesHTTPTests.accept(alice, code).status == .ok)
            #expect(
                try await stream.next(where: Self.isChange(of: jones)) == [
                    Self.spaces([(home, "owner"), (groceries, "owner"), (jones, "member")]), Self.change(jones, try await Self.date(bob, jones)),
                ])
            let aliceID = try #require(
                SpacesHTTPTests.array(try await bob.call(.get, "/api/v1/spaces/\(jones)/members")).last?["accountId"]?.stringValue)
            #expect(try await bob.call(.put, "/api/v1/spaces/\(jones)/memberships/\(aliceID)", body: #"{"role":"reader"}"#).status == .ok)
            // A role change starts the account's dates over from a new version of the space (what it may read changed):
            // the space's new date comes with the new role, before or after it.
            let reroled = try await stream.next(where: Self.isSpaces)
            #expect(reroled.last == Self.spaces([(home, "owner"), (groceries, "owner"), (jones, "reader")]), "\(reroled)")
            let moved = Self.change(jones, try await Self.date(bob, jones))
            #expect(reroled.dropLast().allSatisfy { $0 == moved }, "\(reroled)")
            if !reroled.contains(moved) { #expect(try await stream.next(where: Self.isChange(of: jones)) == [moved]) }
            #expect(try await bob.call(.put, "/api/v1/contacts/b1", body: #"{"firstName":"Bo"}"#).status == .ok)
            #expect(try await stream.next(where: Self.isChange(of: jones)) == [Self.change(jones, try await Self.date(bob, jones))])
            #expect(try await bob.call(.delete, "/api/v1/spaces/\(jones)/memberships/\(aliceID)").status == .noContent)
            #expect(try await stream.next(where: Self.isSpaces) == [Self.spaces([(home, "owner"), (groceries, "owner")])])
            // Nothing of the space it left: the next event is its own write.
            #expect(try await bob.call(.put, "/api/v1/contacts/b2", body: #"{"firstName":"Bea"}"#).status == .ok)
            #expect(try await alice.call(.put, "/api/v1/contacts/a1", body: #"{"firstName":"Al"}"#).status == .ok)
            #expect(try await stream.next(where: { $0.name != "message" }) == [Self.change(home, try await Self.date(alice, home))])

            // The stream ends with its token.
            #expect(try await alice.call(.post, "/api/v1/logout").status == .noContent)
            #expect(try await stream.rest().allSatisfy { $0.name == "message" })
        }
    }

    @Test("spaces=all takes no date, no other value, and no space of the path", arguments: Backend.allCases)
    func refused(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let alice = try await APIClient.signedUp(client)
            let home = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            for path in [
                "/api/v1/changes?spaces=some", "/api/v1/changes?spaces=all&date=x", "/api/v1/changes?spaces=all&spaces=all",
                "/api/v1/spaces/\(home)/changes?spaces=all",
            ] {
                let answer = try await alice.call(.get, path)
                #expect(answer.status == .badRequest && answer.json?["code"] == .string("invalid_parameter"), "\(path): \(answer.body)")
            }
            #expect(try await APIClient(client: client).call(.get, "/api/v1/changes?spaces=all").status == .unauthorized)
        }
    }

    @Test("membership changes made on one instance reach a stream of all spaces on another")
    func acrossInstances() async throws {
        try await LiveHubTests.twoInstances { one, two in
            let alice = try await APIClient.signedUp(one)
            let bob = try await APIClient.signedUp(one, username: "bob", family: "Jones")
            let home = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let jones = try #require(SpacesHTTPTests.array(try await bob.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let stream = try EventStreamReader(port: try #require(two.port), path: "/api/v1/changes?spaces=all", token: alice.token)
            defer { stream.disconnect() }
            _ = try await stream.next(where: Self.isChange(of: home))
            #expect(try await SpacesHTTPTests.accept(alice, try await SpacesHTTPTests.invite(bob, jones, role: "reader")).status == .ok)
            #expect(
                try await stream.next(where: Self.isChange(of: jones)) == [
                    Self.spaces([(home, "owner"), (jones, "reader")]), Self.change(jones, try await Self.date(bob, jones)),
                ])
            #expect(try await bob.call(.put, "/api/v1/contacts/b1", body: #"{"firstName":"Bo"}"#).status == .ok)
            #expect(try await stream.next(where: Self.isChange(of: jones)) == [Self.change(jones, try await Self.date(bob, jones))])
            let aliceID = try #require(
                SpacesHTTPTests.array(try await bob.call(.get, "/api/v1/spaces/\(jones)/members")).last?["accountId"]?.stringValue)
            #expect(try await bob.call(.delete, "/api/v1/spaces/\(jones)/memberships/\(aliceID)").status == .noContent)
            #expect(try await stream.next(where: Self.isSpaces) == [Self.spaces([(home, "owner")])])
        }
    }
}
