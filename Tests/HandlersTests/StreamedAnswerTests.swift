import CompressNIO
import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import SyncStorage
import TestSupport
import Testing

/// Full lists go from the database cursor to the socket in chunks (issue 9): the same bytes as an answer built whole,
/// flat server memory however long the list, and a read that stops when nobody will read its answer.
@Suite("Streamed answers", .sharingTheMachine)
struct StreamedAnswerTests {
    /// PUTs `count` contacts through groups of 20.
    static func seed(_ api: APIClient, count: Int) async throws {
        for start in stride(from: 0, to: count, by: 20) {
            let requests = (start..<min(count, start + 20)).map { n in
                #"{"id":"p\#(n)","method":"PUT","url":"/api/v1/contacts/c\#(n)","body":{"firstName":"Contact \#(n)","emails":["c\#(n)@example.com"]}}"#
            }
            let answer = try await api.call(.post, "/api/v1/group", body: #"{"requests":[\#(requests.joined(separator: ","))]}"#)
            guard answer.status == .ok else { throw TestFailure("seeding failed: \(answer.status) \(answer.body)") }
        }
    }

    @Test("1,500 contacts: chunked, every item once, the same bytes as inside a group, gzip, 304 and HEAD", arguments: Backend.allCases)
    func chunked(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            try await Self.seed(api, count: 1500)
            let answer = try await api.call(.get, "/api/v1/ctcsync")
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentLength] == nil, "streamed, so no length up front")
            let json = try #require(answer.json)
            let date = try #require(json["date"]?.stringValue)
            #expect(answer.headers[.eTag] == "\"\(date)\"")
            #expect(json["sync"] == .bool(false) && json["deleted"] == .array([]))
            guard case .array(let updated)? = json["updated"] else { throw TestFailure("no updated") }
            let ids = updated.compactMap { $0["id"]?.stringValue }
            #expect(ids.count == 1500 && Set(ids).count == 1500)
            // Inside a group the answer is read whole from the group's snapshot: the same bytes.
            let group = try await api.call(.post, "/api/v1/group", body: #"{"requests":[{"id":"c","method":"GET","url":"/api/v1/ctcsync"}]}"#)
            guard case .array(let responses)? = group.json?["responses"], let embedded = responses.first?["body"] else {
                throw TestFailure("no group answer: \(group.body)")
            }
            #expect(JSONWriter.encode(embedded) == JSONWriter.encode(json))
            // Gzip, compressed as it streams.
            let zipped = try await client.executeRequest(
                uri: "/api/v1/ctcsync", method: .get,
                headers: [.authorization: "Bearer \(api.token ?? "")", .acceptEncoding: "gzip"], body: nil)
            var compressed = zipped.body
            #expect(zipped.headers[.contentEncoding] == "gzip" && compressed.readableBytes < answer.body.utf8.count / 3)
            #expect(String(buffer: try compressed.decompress(with: .gzip)) == answer.body)
            // 304 and HEAD read no rows, and leave nothing behind: the next sync answers at once.
            let same = try await api.call(.get, "/api/v1/ctcsync", headers: [.ifNoneMatch: "\"\(date)\""])
            #expect(same.status == .notModified && same.body.isEmpty)
            for _ in 0..<10 {
                let head = try await api.call(.head, "/api/v1/ctcsync")
                #expect(head.status == .ok && head.body.isEmpty && head.headers[.eTag] == "\"\(date)\"")
            }
            let again = try await api.call(.get, "/api/v1/ctcsync")
            #expect(again.body == answer.body)
        }
    }

    /// As many readers as the account's budget of streamed answers, each sending its next full sync or group of
    /// reads the moment it has read the last one: the place of an answer read to its end is free by then (it is given
    /// back before the end), so none is refused.
    @Test("readers of one account, as many as its budget, back to back: never a 429", arguments: Backend.allCases)
    func budgetFreedBeforeTheEnd(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            try await Self.seed(api, count: 40)
            let group = #"{"requests":[{"id":"c","method":"GET","url":"/api/v1/ctcsync"},{"id":"e","method":"GET","url":"/api/v1/evtsync"}]}"#
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { readers in
                for reader in 0..<AppConfiguration().maxSnapshotAnswersPerAccount {
                    readers.addTask {
                        var statuses: [Int] = []
                        for n in 0..<150 {
                            let answer =
                                (reader + n) % 2 == 0
                                ? try await api.call(.get, "/api/v1/ctcsync") : try await api.call(.post, "/api/v1/group", body: group)
                            statuses.append(answer.status.code)
                        }
                        return statuses
                    }
                }
                return try await readers.reduce(into: [Int]()) { $0 += $1 }
            }
            let counts = Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count)
            #expect(counts == [200: 150 * AppConfiguration().maxSnapshotAnswersPerAccount], "\(counts)")
        }
    }

    @Test("8 concurrent full syncs of 2,500 long contacts (7 MB) leave the server's memory flat, and no streamed read is left behind")
    func flatMemory() async throws {
        try await HeavyTestGate.shared.run {
            let database = try await TestPostgres.shared.newDatabaseURL()
            // Eight downloads of one account at once: its snapshot budget raised from 4 to 8.
            let server = try await ServerProcess.start(["--database", database, "--max-snapshot-answers-per-account", "8"])
            defer { server.killAndReap() }
            let base = "http://localhost:\(server.port)"
            let signup = try await Curl.call([
                "-X", "POST", "\(base)/api/v1/signup", "-d", #"{"family":"F","username":"alice","password":"password1"}"#,
            ])
            let token = try #require(SyncAPITestJSON.string(signup.body, "token"))
            let session = Session(
                accountID: try #require(SyncAPITestJSON.string(signup.body, "accountId")),
                spaceID: try #require(SyncAPITestJSON.string(signup.body, "familyId")), role: .owner)
            // Seeded in this process, through the engine, into the server's database (fast: no HTTP per item).
            let opened = try OpenedStore.open(
                try DatabaseURL(parsing: database), deadline: testDeadline, timers: testTimers, logger: Logger(label: "seed"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await opened.runClient() }
                defer { group.cancelAll() }
                let engine = SyncEngine(store: opened.roles.engine, producers: .testing, collections: Collections.registry)
                try await withThrowingTaskGroup(of: Void.self) { writers in
                    for writer in 0..<8 {
                        writers.addTask {
                            for n in stride(from: writer, to: 2_500, by: 8) {
                                let body = JSONValue.object([
                                    ("firstName", .string("Contact \(n)")), ("notes", .string(String(repeating: "n", count: 3_000))),
                                ])
                                _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c\(n)"), body: body, preconditions: .init())
                            }
                        }
                    }
                    try await writers.waitForAll()
                }
            }
            let auth = ["-H", "Authorization: Bearer \(token)"]
            let first = try await Curl.call(auth + ["\(base)/api/v1/ctcsync"])
            let size = first.body.utf8.count
            #expect(first.status == 200 && size > 5_000_000)
            let before = try MediaProcessTests.peakMemory(server.pid)
            // Issue 16: a group of 20 full lists streams sub-answer after sub-answer from its snapshot.
            let reads = (0..<20).map { #"{"id":"r\#($0)","method":"GET","url":"/api/v1/ctcsync"}"# }.joined(separator: ",")
            let group = try await Curl.call(auth + ["-X", "POST", "\(base)/api/v1/group", "-d", #"{"requests":[\#(reads)]}"#])
            #expect(group.status == 200 && group.body.utf8.count > 20 * size)
            let groupGrowth = try MediaProcessTests.peakMemory(server.pid) - before
            print("streamed: a group of 20 full syncs (\(group.body.utf8.count >> 10) KiB), peak memory grew \(groupGrowth >> 10) KiB")
            #expect(groupGrowth <= 64 << 20, "peak memory grew \(groupGrowth >> 20) MiB")
            let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 { group.addTask { try await Curl.call(auth + ["\(base)/api/v1/ctcsync"]).body.utf8.count } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(sizes == Array(repeating: size, count: 8))
            let growth = try MediaProcessTests.peakMemory(server.pid) - before
            print("streamed: 8 concurrent full syncs of 2,500 contacts (\(size >> 10) KiB each), peak memory grew \(growth >> 10) KiB")
            // Built whole, the 8 answers (62 MiB) would cost at least twice that; streamed, a few pages per answer.
            // The bound is issue 9's target (64 MB for 8 concurrent full syncs): measured 18–32 MiB alone, up to 57 MiB
            // while other suites load the 2 cores (PostgresNIO reads rows ahead of a slow consumer).
            #expect(growth <= 64 << 20, "peak memory grew \(growth >> 20) MiB")
            // A client that reads the head and goes away: the server goes on answering others.
            _ = try? await TestPostgres.run(["curl", "-s", "-m", "1", "--limit-rate", "1k", "-o", "/dev/null"] + auth + ["\(base)/api/v1/ctcsync"])
            #expect(try await Curl.call(auth + ["\(base)/api/v1/ctcsync"]).body.utf8.count == size)
        }
    }
}
