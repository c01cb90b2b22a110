import Foundation
import SyncClient
import SyncClientTesting
import Testing

/// A sync downloads its answer before it applies it: the replica's writer is free while the answer comes.
@Suite("A sync's download and the replica's writer", .timeLimit(.minutes(2)))
struct SyncDownloadTests {
    /// The fake, whose group answers stop halfway until `release` is called (a slow link), once `held` is set.
    final class HalfwayTransport: HTTPTransport {
        let server = FakeSyncServer()
        let held = Locked(false)
        /// Yields when a held answer has sent its first half.
        let halfway: AsyncStream<Void>
        private let reachedHalfway: AsyncStream<Void>.Continuation
        private let (released, release) = AsyncStream.makeStream(of: Void.self)

        init() { (halfway, reachedHalfway) = AsyncStream.makeStream(of: Void.self) }

        func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await server.send(call) }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await server.stream(call)
        }

        func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
            let answer = try await server.send(call)
            guard held.withLock({ $0 }) else {
                return HTTPStreamedAnswer(
                    status: answer.status, headers: answer.headers,
                    body: AsyncThrowingStream {
                        $0.yield(answer.body); $0.finish()
                    })
            }
            let (body, pieces) = AsyncThrowingStream.makeStream(of: Data.self)
            let half = answer.body.count / 2
            pieces.yield(answer.body.prefix(half))
            let (released, reachedHalfway) = (self.released, self.reachedHalfway)
            Task {
                reachedHalfway.yield()
                for await _ in released { break }
                pieces.yield(answer.body.dropFirst(half))
                pieces.finish()
            }
            return HTTPStreamedAnswer(status: answer.status, headers: answer.headers, body: body)
        }

        /// Lets the held answer send its second half.
        func releaseAnswer() { release.yield() }
    }

    @Test("a save while a sync's answer is halfway goes through at once; readers see the replica before the sync, then after")
    func saveDuringDownload() async throws {
        let transport = HalfwayTransport()
        let client = try TestKitTests.client(transport.server, transport: transport)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for n in 0..<300 { transport.server.edit(.contacts, id: "s\(n)", json: ["firstName": .string("Server \(n)")]) }
        transport.held.withLock { $0 = true }
        let sync = Task { try await client.sync() }
        for await _ in transport.halfway { break }
        // The sync waits for the rest of its answer: the replica's writer is free, and the replica is as it was.
        try await client.save(Contact(id: "local", firstName: "Ann"))
        #expect(try client.all(Contact.self).map(\.id) == ["local"])
        transport.releaseAnswer()
        _ = try await sync.value
        #expect(try client.all(Contact.self).count == 301)
        // The answer's file is gone once applied.
        let answers = (try? FileManager.default.contentsOfDirectory(atPath: client.configuration.replicaPath + ".answers")) ?? []
        #expect(answers.isEmpty)
    }

    @Test("an answer larger than syncAnswerMaxBytes fails with answer_too_large and leaves no file; the replica is unchanged")
    func answerCap() async throws {
        let server = FakeSyncServer()
        let client = try TestKitTests.client(server) { $0.syncAnswerMaxBytes = 10_000 }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for n in 0..<300 { server.edit(.contacts, id: "s\(n)", json: ["firstName": .string("Server \(n)")]) }
        await #expect(throws: SyncClientError.self) { try await client.sync() }
        #expect(client.status.lastError?.description.contains("larger than 10000 bytes") == true)
        #expect(try client.all(Contact.self).isEmpty && client.dateOfSync == nil)
        let answers = (try? FileManager.default.contentsOfDirectory(atPath: client.configuration.replicaPath + ".answers")) ?? []
        #expect(answers.isEmpty)
    }
}
