import Foundation
import GRDB
import SyncClientTesting
import Synchronization
import Testing

@testable import SyncClient

/// A sync's answer read while it downloads (issue 57, item 4): a replaced list's rows gathered in a staging database of
/// the sync's own before the last byte, the replica untouched until the whole answer is applied in one transaction; a
/// download cut midway leaves the replica as it was and no file behind, and the next sync starts clean.
@Suite("Staged sync answers")
struct StagedSyncTests {
    /// The fake, whose group answers come with each response's members in the server's order (the fake sorts them, so
    /// its bodies come before their ids and are read whole), in pieces of 512 bytes while `pauseAt` is set: past that
    /// many bytes the answer waits for `resume()`, then goes on, or is cut there (a dropped connection) when `cut` is
    /// set.
    final class PausingTransport: HTTPTransport {
        let server = FakeSyncServer()
        let pauseAt = Mutex<Int?>(nil)
        let cut = Mutex(false)
        /// Yields when an answer reached its pause (or its cut).
        let paused: AsyncStream<Void>
        private let reachedPause: AsyncStream<Void>.Continuation
        private let (resumed, resumption) = AsyncStream.makeStream(of: Void.self)

        init() { (paused, reachedPause) = AsyncStream.makeStream(of: Void.self) }

        func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await server.send(call) }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await server.stream(call)
        }

        func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
            let sorted = try await server.send(call)
            guard call.url.path.hasSuffix("/group"), sorted.status == 200 else { return HTTPStreamedAnswer(sorted) }
            let answer = HTTPAnswer(status: sorted.status, headers: sorted.headers, body: try Self.serverOrder(sorted.body))
            guard let pause = pauseAt.withLock({ $0 }) else { return HTTPStreamedAnswer(answer) }
            let cut = self.cut.withLock { $0 }
            let (body, pieces) = AsyncThrowingStream.makeStream(of: Data.self)
            let (resumed, reachedPause) = (self.resumed, self.reachedPause)
            Task {
                func send(_ range: Range<Int>) {
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        pieces.yield(answer.body.subdata(in: offset..<min(offset + 512, range.upperBound)))
                        offset += 512
                    }
                }
                let half = min(pause, answer.body.count)
                send(0..<half)
                guard half < answer.body.count else { return pieces.finish() }
                reachedPause.yield()
                for await _ in resumed { break }
                if cut {
                    pieces.finish(throwing: URLError(.networkConnectionLost))
                    return
                }
                send(half..<answer.body.count)
                pieces.finish()
            }
            return HTTPStreamedAnswer(status: answer.status, headers: answer.headers, body: body)
        }

        /// A group answer as the server writes it: `id`, `status`, `headers`, then `body`.
        static func serverOrder(_ body: Data) throws -> Data {
            let group = try JSONDecoder().decode(GroupAnswer.self, from: body)
            let responses = group.responses.map { response in
                var text = #"{"id":\#(JSONValue.string(response.id).text),"status":\#(response.status)"#
                if let headers = response.headers { text += #","headers":\#(try! JSONValue(encoding: headers).text)"# }
                return text + #","body":\#((response.body ?? .null).text)}"#
            }
            return Data(#"{"responses":[\#(responses.joined(separator: ","))]}"#.utf8)
        }

        /// Lets a paused answer go on.
        func resume() { resumption.yield() }
    }

    /// The files in the replica's answers folder (the answers being downloaded and their staging databases).
    static func answerFiles(_ client: SyncClient) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: client.configuration.replicaPath + ".answers")) ?? []
    }

    /// A client of `transport`'s fake (one attempt per sync), signed up, with `count` contacts on the server (about 60
    /// bytes each); its sync answers are staged while they download once they reach `threshold` bytes (the SDK's 1 MiB
    /// by default; the answers here are about 140 KB).
    static func client(_ transport: PausingTransport, contacts count: Int, threshold: Int = 1) async throws -> SyncClient {
        let client = try TestKitTests.client(transport.server, transport: transport) {
            $0.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .milliseconds(1), sleep: { _ in })
            $0.syncStagingThreshold = threshold
        }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for n in 0..<count {
            transport.server.edit(.contacts, id: "s\(n)", json: ["firstName": .string("Server \(n)"), "notes": "é \"q\"\n"])
        }
        return client
    }

    /// Waits until the sync under way has made its staging database.
    static func waitForStaging(_ client: SyncClient) async throws {
        let deadline = ContinuousClock.now + .seconds(180)
        while !answerFiles(client).contains(where: { $0.hasSuffix(".staging") }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(answerFiles(client).contains { $0.hasSuffix(".staging") }, "\(answerFiles(client))")
    }

    @Test("a first sync stages its list while the answer downloads, outside the replica, which changes only once the answer is whole")
    func stagedBeforeTheLastByte() async throws {
        let transport = PausingTransport()
        let client = try await Self.client(transport, contacts: 2000)
        // What an app observing the list sees: the list before the sync, then the whole list, never a part of it.
        let counts = ValueObservation.tracking { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE collection = 'contacts'") ?? 0
        }.values(in: client.replica.pool)
        let seen = Task {
            var seen: [Int] = []
            for try await count in counts {
                seen.append(count)
                if count > 1 { break }
            }
            return seen
        }
        transport.pauseAt.withLock { $0 = 100_000 }
        let sync = Task { try await client.sync() }
        for await _ in transport.paused { break }
        // Halfway through the contacts: their staging database exists (it is made at the list's first item), and the
        // replica is as it was; its writer is free.
        try await Self.waitForStaging(client)
        #expect(try client.all(Contact.self).isEmpty && client.dateOfSync == nil)
        try await client.save(Contact(id: "local", firstName: "Ann"))
        transport.resume()
        _ = try await sync.value
        let ids = try client.all(Contact.self).map(\.id)
        #expect(ids.count == 2001 && ids.contains("local") && ids.contains("s1999"))
        #expect(client.dateOfSync != nil)
        #expect(Self.answerFiles(client).isEmpty, "the answer's file and its staging database are gone")
        #expect(Set(try await seen.value).isSubset(of: [0, 1, 2001]))
        #expect(try await seen.value.last == 2001)
    }

    @Test(
        "a first sync cut midway leaves the replica as it was and no file; the next sync starts clean and gives an uncut sync's replica",
        arguments: [true, false])
    func cutFirstSync(staged: Bool) async throws {
        let transport = PausingTransport()
        // Staged while it downloads, or (a short answer) read by the apply once whole.
        let client = try await Self.client(transport, contacts: 2000, threshold: staged ? 1 : 1 << 20)
        try await client.save(Contact(id: "local", firstName: "Ann"))
        try await client.push()
        let before = try StreamedSyncTests.dump(client.replica)
        transport.pauseAt.withLock { $0 = 100_000 }
        transport.cut.withLock { $0 = true }
        let sync = Task { try await client.sync() }
        for await _ in transport.paused { break }
        // Cut while the contacts are being staged.
        if staged { try await Self.waitForStaging(client) }
        transport.resume()
        await #expect(throws: SyncClientError.self) { try await sync.value }
        #expect(client.status.state == .offline)
        #expect(try StreamedSyncTests.dump(client.replica) == before, "the replica as it was, whole")
        #expect(client.dateOfSync == nil)
        #expect(Self.answerFiles(client).isEmpty, "neither the answer's file nor its staging database is left")
        // Nor is a staging database left attached to the writer.
        let attached = try await client.replica.pool.writeWithoutTransaction { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_database_list")
        }
        #expect(!attached.contains(StagingArea.attachedSchema))

        transport.pauseAt.withLock { $0 = nil }
        try await client.sync()
        let ids = try client.all(Contact.self).map(\.id)
        #expect(ids.count == 2001 && ids.contains("local") && ids.contains("s1999"))
        // The same replica as a device whose first sync was never cut.
        let other = try TestKitTests.client(transport.server, transport: transport)
        try await other.logIn(username: "alice", password: "password1")
        try await other.sync()
        #expect(try StreamedSyncTests.dump(client.replica) == StreamedSyncTests.dump(other.replica))
        #expect(Self.answerFiles(client).isEmpty)
    }

    @Test("an answer over syncAnswerMaxBytes stops its staging midway: answer_too_large, nothing applied, no file left")
    func answerCapWhileStaging() async throws {
        let transport = PausingTransport()
        let client = try TestKitTests.client(transport.server, transport: transport) {
            $0.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .milliseconds(1), sleep: { _ in })
            $0.syncStagingThreshold = 1
            $0.syncAnswerMaxBytes = 50_000
        }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for n in 0..<2000 { transport.server.edit(.contacts, id: "s\(n)", json: ["firstName": .string("Server \(n)")]) }
        transport.pauseAt.withLock { $0 = 1 << 30 }
        await #expect(throws: SyncClientError.self) { try await client.sync() }
        // The download's failure, not the staging's (which saw its answer stop midway).
        #expect(client.status.lastError?.description.contains("larger than 50000 bytes") == true, "\(String(describing: client.status.lastError))")
        #expect(try client.all(Contact.self).isEmpty && client.dateOfSync == nil)
        #expect(Self.answerFiles(client).isEmpty)
    }

    @Test("an answer staged in a database of its own, then applied with it attached, gives exactly the replica of the whole answer")
    func stagedFileGivesTheSameReplica() throws {
        let endpoints = ServerModel.family.endpoints
        let whole = try StreamedSyncTests.seeded()
        let group = try JSONDecoder().decode(GroupAnswer.self, from: Data(StreamedSyncTests.groupAnswer.utf8))
        let answers = Dictionary(uniqueKeysWithValues: group.responses.map { ($0.id, $0) })
        let expected = try whole.pool.write { db in try SyncClient.applySync(db, endpoints, answers) }
        let wholeDump = try StreamedSyncTests.dump(whole)
        let otherDate = StreamedSyncTests.groupAnswer.replacingOccurrences(
            of: #"{"date":"D1","sync":false,"updated":[],"deleted":[],"crop""#, with: #"{"date":"D2","sync":false,"updated":[],"deleted":[],"crop""#)
        for (text, size) in [
            (StreamedSyncTests.groupAnswer, 1), (StreamedSyncTests.groupAnswer, 100), (StreamedSyncTests.groupAnswer, 1 << 20), (otherDate, 100),
        ] {
            let replica = try StreamedSyncTests.seeded()
            let before = try StreamedSyncTests.dump(replica)
            let path = Scratch.path("staging-")
            defer { StagingArea.remove(path) }
            let staging = StagingArea.file(path, protection: nil)
            var reader = StreamedSyncTests.reader(text, pieces: size)
            var staged = try SyncClient.stage(endpoints, &reader, staging)
            try staging.close()
            staged.stagingPath = staging.path
            #expect(staged.stagingPath == path, "the replaced lists were staged in the file")
            #expect(try StreamedSyncTests.dump(replica) == before, "nothing applied by the staging")
            do {
                let applied = try replica.pool.writeWithoutTransaction { db in try SyncClient.applyStaged(db, endpoints, staged) }
                #expect(text == StreamedSyncTests.groupAnswer)
                #expect(try StreamedSyncTests.dump(replica) == wholeDump, "pieces of \(size) bytes")
                #expect(applied.date == expected.date && applied.replaced == expected.replaced)
                #expect(applied.others["verify"]?.body?["date"] == "D1")
            } catch {
                // Answers of different dates: nothing applied.
                #expect(text == otherDate && "\(error)".contains("different dates"), "\(error)")
                #expect(try StreamedSyncTests.dump(replica) == before)
            }
            // The staging database is detached again, whatever the apply's outcome.
            let attached = try replica.pool.writeWithoutTransaction { db in try String.fetchAll(db, sql: "SELECT name FROM pragma_database_list") }
            #expect(!attached.contains(StagingArea.attachedSchema))
        }
    }
}
