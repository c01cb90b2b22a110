import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Issue 38's hostile cases: a date carried from one space to another, and a removed member that races its removal
/// with writes and groups.
@Suite("Spaces under attack", .sharingTheMachine)
struct SpacesHostileTests {
    @Test("a date of one space sent on another answers sync: false with that space's full list, never the first's data", arguments: Backend.allCases)
    func dateFromAnotherSpace(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live) { client in
            let alice = try await APIClient.signedUp(client)
            let home = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            let other = try #require(
                try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Other"}"#).json?["id"]?.stringValue)
            // The home space moves far ahead of the other one, so its date names a counter the other never reached.
            for n in 1...5 {
                #expect(try await alice.call(.put, "/api/v1/contacts/h\(n)", body: #"{"firstName":"Home"}"#).status == .ok)
            }
            #expect(try await alice.call(.put, "/api/v1/spaces/\(other)/contacts/o1", body: #"{"firstName":"Other"}"#).status == .ok)
            let homeDate = try #require(try await alice.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            let otherDate = try #require(try await alice.call(.get, "/api/v1/spaces/\(other)/ctcsync").json?["date"]?.stringValue)
            for (space, date, ids) in [(other, homeDate, ["o1"]), (home, otherDate, ["h1", "h2", "h3", "h4", "h5"])] {
                let path = space == home ? "/api/v1/ctcsync" : "/api/v1/spaces/\(space)/ctcsync"
                let answer = try await alice.call(.get, "\(path)?date=\(date)")
                #expect(answer.status == .ok && answer.json?["sync"] == .bool(false), "\(answer.body)")
                #expect(SpacesHTTPTests.ids(answer.json?["updated"]) == ids, "\(answer.body)")
                // The same inside a group, and on the bundle of every list.
                let group = try await alice.call(
                    .post, "/api/v1/group",
                    body: #"{"requests":[{"id":"a","method":"GET","url":"\#(path)?date=\#(date)"}]}"#)
                guard case .array(let answers)? = group.json?["responses"] else { throw TestFailure("group: \(group.body)") }
                #expect(answers.first?["body"]?["sync"] == .bool(false), "\(group.body)")
                #expect(SpacesHTTPTests.ids(answers.first?["body"]?["updated"]) == ids, "\(group.body)")
            }
            // A live stream of the other space given the home space's date: a notice at once (the app syncs in full).
            let stream = try EventStreamReader(
                port: try #require(client.port), path: "/api/v1/spaces/\(other)/changes?date=\(homeDate)", token: alice.token)
            defer { stream.disconnect() }
            let first = try await stream.next { $0.name == "change" }
            #expect(first == [EventStreamReader.Event(name: "change", data: #"{"date":"\#(otherDate)"}"#)])
        }
    }

    /// Set once the removal answered.
    final class RemovalFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// What one call of the removed member saw.
    struct Call: Sendable {
        let startedAfterRemoval: Bool
        /// The status of a single call, or of each sub-request of a group.
        let statuses: [Int]
        /// The ids it wrote, when its write answered 200.
        let acknowledged: [String]
        let refused: [String]
    }

    @Test("a removed member racing its removal with writes and groups: no 5xx, nothing acknowledged lost, nothing after", arguments: Backend.allCases)
    func removedMemberRacing(backend: Backend) async throws {
        // A long ceiling for the statements: the racing writers queue on the space's lock with the removal.
        try await TestApp.run(backend) { client in
            let alice = try await APIClient.signedUp(client)
            let bob = try await APIClient.signedUp(client, username: "bob", family: "Jones")
            let space = try #require(SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces")).first?["id"]?.stringValue)
            #expect(try await SpacesHTTPTests.accept(bob, try await SpacesHTTPTests.invite(alice, space, role: "member")).status == .ok)
            let bobID = try #require(
                SpacesHTTPTests.array(try await alice.call(.get, "/api/v1/spaces/\(space)/members")).last?["accountId"]?.stringValue)
            let removed = RemovalFlag()
            let (acknowledgements, acknowledge) = AsyncStream.makeStream(of: Void.self)
            let calls = try await withThrowingTaskGroup(of: [Call].self) { group in
                // Three writers of Bob: single writes and groups (a write and a read), until one of their calls begun
                // after the removal answered has been refused twice.
                for writer in 0..<3 {
                    group.addTask {
                        var calls: [Call] = []
                        var refusedAfter = 0
                        var n = 0
                        while refusedAfter < 2 {
                            n += 1
                            let id = "b\(writer)-\(n)"
                            let after = removed.value.load(ordering: .sequentiallyConsistent)
                            let call: Call
                            if n % 2 == 0 {
                                let answer = try await bob.call(
                                    .put, "/api/v1/spaces/\(space)/contacts/\(id)", body: #"{"firstName":"Bob"}"#)
                                let status = Int(answer.status.code)
                                call = Call(
                                    startedAfterRemoval: after, statuses: [status], acknowledged: status == 200 ? [id] : [],
                                    refused: status == 200 ? [] : [id])
                            } else {
                                let answer = try await bob.call(
                                    .post, "/api/v1/group",
                                    body: """
                                        {"requests":[
                                         {"id":"w","method":"PUT","url":"/api/v1/spaces/\(space)/contacts/\(id)","body":{"firstName":"Bob"}},
                                         {"id":"r","method":"GET","url":"/api/v1/spaces/\(space)/ctcsync"}]}
                                        """)
                                let statuses = SpacesHTTPTests.statuses(answer).map { value -> Int in
                                    if case .number(let number)? = value { return Int(number) }
                                    return -1
                                }
                                #expect(answer.status == .ok, "\(answer.body)")
                                let wrote = statuses.first == 200
                                call = Call(
                                    startedAfterRemoval: after, statuses: statuses, acknowledged: wrote ? [id] : [], refused: wrote ? [] : [id])
                            }
                            if !call.acknowledged.isEmpty { acknowledge.yield() }
                            if after && call.statuses.allSatisfy({ $0 == 404 }) { refusedAfter += 1 }
                            calls.append(call)
                            // A writer still acknowledged after the removal answered would never stop: the expectations
                            // below report it.
                            if after && calls.filter(\.startedAfterRemoval).count > 20 { break }
                        }
                        return calls
                    }
                }
                // Alice removes Bob once his writers have had 6 writes acknowledged, while they keep writing.
                group.addTask {
                    var seen = 0
                    for await _ in acknowledgements {
                        seen += 1
                        if seen == 6 { break }
                    }
                    let removal = try await alice.call(.delete, "/api/v1/spaces/\(space)/memberships/\(bobID)")
                    #expect(removal.status == .noContent)
                    removed.value.store(true, ordering: .sequentiallyConsistent)
                    return []
                }
                var all: [Call] = []
                for try await calls in group { all += calls }
                acknowledge.finish()
                return all
            }
            let statuses = calls.flatMap(\.statuses)
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 404 }, "\(statuses)")
            // Every call begun after the removal answered was refused, each of its sub-requests with 404.
            let late = calls.filter(\.startedAfterRemoval)
            #expect(!late.isEmpty && late.allSatisfy { $0.statuses.allSatisfy { $0 == 404 } }, "\(late.map(\.statuses))")
            // Alice's space holds exactly Bob's acknowledged writes: none lost, none refused that landed.
            let list = try await alice.call(.get, "/api/v1/ctcsync")
            let held = Set(SpacesHTTPTests.ids(list.json?["updated"]))
            #expect(held == Set(calls.flatMap(\.acknowledged)), "held \(held.sorted())")
            #expect(held.isDisjoint(with: calls.flatMap(\.refused)))
            #expect(held.count >= 6)
        }
    }

    @Test("a space joined behind an instance's back is used at once there: the cached session is re-read before a 404")
    func joinedElsewhere() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL()
        let parsed = try DatabaseURL(parsing: url)
        let first = try await LiveHubTests.app(parsed, maxDuration: .seconds(3600))
        let second = try await LiveHubTests.app(parsed, maxDuration: .seconds(3600))
        try await HangWatch.watched(first, "first", mode: .router) { one in
            try await HangWatch.watched(second, "second", mode: .router) { two in
                let alice = try await APIClient.signedUp(one, username: "alice", family: "Smith")
                let bob = APIClient(client: two, token: try await APIClient.signedUp(one, username: "bob", family: "Jones").token)
                let carol = APIClient(client: two, token: try await APIClient.signedUp(one, username: "carol", family: "Brown").token)
                // The second instance caches bob's and carol's sessions (memberships: their home spaces only).
                #expect(try await bob.call(.get, "/api/v1/spaces").status == .ok)
                #expect(try await carol.call(.get, "/api/v1/spaces").status == .ok)
                let space = try #require(
                    try await alice.call(.post, "/api/v1/spaces", body: #"{"name":"Shared"}"#).json?["id"]?.stringValue)
                // Bob joins with no notice at all: the second instance's cache can learn of it only by asking again.
                try await TestPostgres.shared.execute(
                    """
                    INSERT INTO memberships (space_id, account_id, role, since_version)
                    SELECT f.id, a.id, 'member', f.version FROM families f, accounts a WHERE f.id = '\(space)' AND a.username = 'bob'
                    """, on: url)
                let put = try await bob.call(.put, "/api/v1/spaces/\(space)/contacts/c1", body: #"{"firstName":"Bob"}"#)
                #expect(put.status == .ok, "\(put.body)")
                let list = try await bob.call(.get, "/api/v1/spaces/\(space)/ctcsync")
                #expect(SpacesHTTPTests.ids(list.json?["updated"]) == ["c1"], "\(list.body)")
                // A stranger is still answered as for no space, after the same second look.
                let stranger = try await carol.call(.get, "/api/v1/spaces/\(space)/ctcsync")
                #expect(stranger.status == .notFound && stranger.json?["code"] == .string("not_found"), "\(stranger.body)")
            }
        }
    }
}
