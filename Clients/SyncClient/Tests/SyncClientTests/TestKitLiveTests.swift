import Foundation
import SyncClient
import SyncClientTesting
import Testing

/// The test kit's deltas, live notices and clock: an app tests its delta and live paths, with several devices on one
/// fake server. These are also its examples.
@Suite("Test kit: deltas, live notices, devices and the clock")
struct TestKitLiveTests {
    /// `GET` of a path on the fake, signed in, as JSON.
    static func get(_ server: FakeSyncServer, _ path: String) async throws -> JSONValue {
        let answer = try await server.send(
            HTTPCall(method: "GET", url: URL(string: "https://fake.example/api/v1" + path)!, headers: ["Authorization": "Bearer fake-token"]))
        #expect(answer.status == 200, "\(path)")
        return try JSONValue.parse(answer.body)
    }

    @Test("a date the fake gave is answered with what moved since: the items written and the ids deleted after it")
    func deltaAnswers() async throws {
        let server = FakeSyncServer()
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        server.edit(.contacts, id: "c2", json: ["firstName": "Bob"])
        let first = try await Self.get(server, "/ctcsync")
        #expect(first["sync"] == false && first["updated"]?.arrayValue?.count == 2)
        let date = try #require(first["date"]?.stringValue)
        #expect(try await Self.get(server, "/ctcsync?date=\(date)") == ["date": .string(date), "sync": true, "updated": [], "deleted": []])
        server.edit(.contacts, id: "c2", json: ["firstName": "Bobby"])
        server.remove(.contacts, id: "c1")
        server.edit(.contacts, id: "c3", json: ["firstName": "Cid"])
        let delta = try await Self.get(server, "/ctcsync?date=\(date)")
        #expect(delta["sync"] == true && delta["deleted"] == ["c1"])
        #expect(delta["updated"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["c2", "c3"])
        // A deleted item written again is updated, not deleted.
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        let again = try await Self.get(server, "/ctcsync?date=\(date)")
        #expect(again["deleted"] == [] && again["updated"]?.arrayValue?.count == 3)
        // A date it never gave (another server's, or past its counter) is answered whole.
        #expect(try await Self.get(server, "/ctcsync?date=fake.999")["sync"] == false)
        #expect(try await Self.get(server, "/ctcsync?date=2024-01-01")["sync"] == false)
        // The singleton sync: the family null while unchanged, the account's profile sent whole only.
        let family = try await Self.get(server, "/familysync")
        let familyDate = try #require(family["date"]?.stringValue)
        let unchanged = try await Self.get(server, "/familysync?date=\(familyDate)")
        #expect(unchanged["sync"] == true && unchanged["family"] == .null && unchanged["members"]?["updated"] == [])
        server.edit(.family, id: server.familyID, json: ["name": "Smith"])
        #expect(try await Self.get(server, "/familysync?date=\(familyDate)")["family"]?["name"] == "Smith")
    }

    @Test("example: two devices on one fake; the second gets the first's writes and deletions as deltas")
    func twoDevices() async throws {
        let server = FakeSyncServer()
        let phone = try TestKitTests.client(server)
        let tablet = try TestKitTests.client(server)
        try await phone.signUp(family: "Smith", username: "alice", password: "password1")
        try await tablet.logIn(username: "alice", password: "password1")
        try await phone.save(Contact(id: "c1", firstName: "Ann"))
        try await phone.save(Contact(id: "c2", firstName: "Bob"))
        try await phone.sync()
        try await tablet.sync()
        #expect(try tablet.all(Contact.self).map(\.id) == ["c1", "c2"])
        try await phone.delete(.contacts, id: "c1")
        var bob = try #require(try phone.all(Contact.self).first { $0.id == "c2" })
        bob.lastName = "Martin"
        try await phone.save(bob)
        try await phone.sync()
        let before = server.calls.count
        try await tablet.sync()
        #expect(try tablet.all(Contact.self).map(\.id) == ["c2"])
        #expect(try tablet.all(Contact.self).first?.lastName == "Martin")
        // The tablet asked from its date, and the answer was a delta.
        #expect(server.calls[before...].contains { $0.hasPrefix("GET /ctcsync?date=fake.") })
    }

    @Test("example: live mode hears another device's write and syncs it by itself", .timeLimit(.minutes(10)))
    func liveNotices() async throws {
        let server = FakeSyncServer()
        let phone = try TestKitTests.client(server) { $0.liveDebounce = .milliseconds(1) }
        try await phone.signUp(family: "Smith", username: "alice", password: "password1")
        try await phone.sync()
        let contacts = phone.observeItems(.contacts)
        phone.startLive()
        await AutoPushStatusTests.until(phone) { $0.liveConnected }
        server.edit(.contacts, id: "c9", json: ["firstName": "Zoe"])
        for try await list in contacts where list.contains(where: { $0["id"] == "c9" }) { break }
        #expect(server.calls.contains { $0.hasPrefix("GET /changes?date=fake.") })
        // A revoked session ends the stream: live mode stops, signed out.
        server.revokeSessions()
        await AutoPushStatusTests.until(phone) { !$0.liveConnected }
        await phone.stopLive()
    }

    @Test("the live stream tells a date it has not seen at once, one notice per write, and ends when the account leaves")
    func liveStream() async throws {
        let server = FakeSyncServer()
        let call = { (path: String) in
            HTTPCall(method: "GET", url: URL(string: "https://fake.example/api/v1" + path)!, headers: ["Authorization": "Bearer t"])
        }
        let (status, bytes) = try await server.stream(call("/changes?date=fake.0"))
        #expect(status == 200)
        var chunks = bytes.makeAsyncIterator()
        #expect(
            try await chunks.next().map { String(decoding: $0, as: UTF8.self) } == "retry: 2000\n\n"
                + "id: fake.1\nevent: change\ndata: {\"date\":\"fake.1\"}\n\n")
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        #expect(try await chunks.next().map { String(decoding: $0, as: UTF8.self) } == "id: fake.2\nevent: change\ndata: {\"date\":\"fake.2\"}\n\n")
        // Up to date: only the retry hint. Another space: 404 until the account joins it; leaving ends its streams.
        let (_, current) = try await server.stream(call("/changes?date=fake.2"))
        var quiet = current.makeAsyncIterator()
        #expect(try await quiet.next().map { String(decoding: $0, as: UTF8.self) } == "retry: 2000\n\n")
        #expect(try await server.stream(call("/spaces/club/changes")).status == 404)
        server.join(space: "club")
        let (joined, club) = try await server.stream(call("/spaces/club/changes"))
        #expect(joined == 200)
        var clubChunks = club.makeAsyncIterator()
        _ = try await clubChunks.next()
        server.leave(space: "club")
        #expect(try await clubChunks.next() == nil)
    }

    @Test("example: a manual clock makes answers a test compares whole")
    func manualClock() async throws {
        let server = FakeSyncServer()
        server.time = Date(timeIntervalSince1970: 1_800_000_000)
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann"])
        server.time = Date(timeIntervalSince1970: 1_800_000_060)
        server.edit(.contacts, id: "c1", json: ["firstName": "Anna"])
        let answer = try await Self.get(server, "/ctcsync")
        #expect(answer["updated"] == [["id": "c1", "firstName": "Anna", "modified": "2027-01-15T08:01:00.000Z"]])
    }
}
