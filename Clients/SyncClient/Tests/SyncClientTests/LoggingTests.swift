import Foundation
import Logging
import SyncClient
import SyncClientTesting
import Testing

/// The SDK's logs (swift-log): what happened and why, under one label per subsystem, never a secret.
@Suite("Logging")
struct LoggingTests {
    /// One log line as a handler got it.
    struct Line: Sendable {
        let label: String
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    /// A handler that hands every line to `record`.
    struct Capture: LogHandler {
        let label: String
        let record: @Sendable (Line) -> Void
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            record(Line(label: label, level: event.level, message: event.message.description, metadata: event.metadata ?? [:]))
        }
    }

    /// Loggers whose lines go to `lines`.
    static func capturing(into lines: Locked<[Line]>) -> @Sendable (String) -> Logger {
        { label in Logger(label: label) { _ in Capture(label: label) { line in lines.withLock { $0.append(line) } } } }
    }

    @Test("a sync's end, a refused write, a conflict, a dropped session and a failed download are logged by subsystem")
    func lines() async throws {
        let server = FakeSyncServer()
        let lines = Locked<[Line]>([])
        let client = try TestKitTests.client(server) { configuration in
            configuration.makeLogger = Self.capturing(into: lines)
        }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        // A write the server refuses for good (over its body limit) and a conflict settled by the SDK.
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "notes": "v1"])
        try await client.sync()
        try await client.save(.contacts, id: "c1", json: ["firstName": "Ann", "notes": "v1", "lastName": "Martin"])
        server.edit(.contacts, id: "c1", json: ["firstName": "Ann", "notes": "v2"])
        try await client.save(.contacts, id: "big", json: ["notes": .string(String(repeating: "x", count: 2000))])
        server.limits.bodyMaxBytes = 1000
        let report = try await client.sync()
        #expect(report.failed == 1 && report.conflicts == 1)
        _ = await #expect(throws: SyncClientError.self) { try await client.media("/api/v1/media/" + String(repeating: "0", count: 64)) }
        server.revokeSessions()
        _ = await #expect(throws: SyncClientError.self) { try await client.sync() }

        let logged = lines.withLock { $0 }
        func first(_ label: String, _ message: String) -> Line? { logged.first { $0.label == label && $0.message.hasPrefix(message) } }
        #expect(first(SyncClientLog.session, "signed in")?.metadata["account"] == "fake-account")
        let refused = try #require(first(SyncClientLog.push, "write refused"))
        #expect(refused.level == .warning && refused.metadata["id"] == "big" && refused.metadata["code"] == "payload_too_large")
        #expect(first(SyncClientLog.push, "conflict settled")?.metadata["resolution"] == "merged")
        let finished = try #require(logged.last { $0.label == SyncClientLog.sync && $0.message == "sync finished" })
        #expect(finished.metadata["failed"] == "1" && finished.metadata["conflicts"] == "1" && finished.metadata["date"] != nil)
        #expect(first(SyncClientLog.media, "download failed")?.level == .warning)
        #expect(first(SyncClientLog.session, "session ended")?.level == .notice)
        #expect(first(SyncClientLog.sync, "sync failed")?.metadata["code"] == "not_signed_in")
        // Never a secret nor an item's content.
        let text = logged.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!text.contains("password1") && !text.contains("fake-token") && !text.contains("Martin") && !text.contains("xxxx"))
        #expect(Set(logged.map(\.label)).isSubset(of: SyncClientLog.all))
    }

    @Test("live mode logs its connections and its drops", .timeLimit(.minutes(2)))
    func live() async throws {
        let server = FakeSyncServer()
        let lines = Locked<[Line]>([])
        let client = try TestKitTests.client(server) { configuration in
            configuration.makeLogger = Self.capturing(into: lines)
            configuration.liveMaximumBackoff = .milliseconds(5)
        }
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.sync()
        client.startLive()
        await AutoPushStatusTests.until(client) { $0.liveConnected }
        // The account leaves the space: the stream ends, and the next one is refused (404) until the client stops.
        server.leave(space: server.familyID)
        func logged() -> [Line] { lines.withLock { $0 }.filter { $0.label == SyncClientLog.live } }
        while !logged().contains(where: { $0.message == "stream dropped" }) { await Task.yield() }
        await client.stopLive()
        #expect(logged().first?.message == "stream connected" && logged().first?.metadata["path"] == "/api/v1/changes")
        #expect(logged().contains { $0.message == "stream ended by the server" })
        #expect(logged().first { $0.message == "stream dropped" }?.metadata["code"] == "http_404")
    }
}
