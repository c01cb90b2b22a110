import Foundation
import HTTPTypes
import SyncClient
import Synchronization
import TestSupport
import Testing

/// Issue 18, media on the client (protocol §10): uploads queued offline and pushed before the items that name them,
/// downloads kept in a bounded cache and never fetched twice, resumed with `Range` after a cut.
@Suite("SDK media", .sharingTheMachine)
struct MediaClientTests {
    /// The calls an SDK client makes, over the real transport.
    final class RecordingTransport: HTTPTransport {
        let inner = URLSessionTransport()
        let calls = Mutex<[HTTPCall]>([])

        func send(_ call: HTTPCall) async throws -> HTTPAnswer {
            calls.withLock { $0.append(call) }
            return try await inner.send(call)
        }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            calls.withLock { $0.append(call) }
            return try await inner.stream(call)
        }

        func mediaCalls() -> [HTTPCall] { calls.withLock { $0.filter { $0.url.path.contains("/media/") } } }
    }

    static func jpeg(_ count: Int, seed: UInt8) -> Data {
        Data([0xFF, 0xD8, 0xFF, 0xE0] + (0..<max(0, count - 4)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    static func client(_ server: LiveServer, cache: Int = 200 * 1024 * 1024) throws -> (SyncClient, RecordingTransport) {
        let transport = RecordingTransport()
        var configuration = SyncClientConfiguration(serverURL: server.base, replicaPath: LiveServer.replicaPath())
        configuration.transport = transport
        configuration.pushDelay = nil
        configuration.mediaCacheBytes = cache
        configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(10))
        return (try SyncClient(configuration: configuration), transport)
    }

    @Test("a photo saved offline with its post: the upload leaves first, then the post; another device downloads it once")
    func uploadThenItem() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (phone, _) = try Self.client(server)
            try await phone.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(phone.currentSession?.token)
            let photo = Self.jpeg(300_000, seed: 7)
            let url = try await phone.upload(photo, contentType: "image/jpeg")
            #expect(url.hasPrefix("/api/v1/media/") && url.count == "/api/v1/media/".count + 64)
            try await phone.save(WallPost(id: "p1", type: "photo", mediaUrl: url))
            #expect(phone.status.pendingWrites == 2)
            let report = try await phone.sync()
            #expect(report.pushed == 2 && phone.status.pendingWrites == 0)
            #expect(try await server.call(.get, url, token: token).status == 200)
            #expect(try await server.call(.get, "/api/v1/wall/p1", token: token).json?["mediaUrl"]?.stringValue == url)

            let (tablet, calls) = try Self.client(server)
            try await tablet.logIn(username: "alice", password: "password1")
            try await tablet.sync()
            let post = try #require(try tablet.all(WallPost.self).first)
            let file = try await tablet.media(try #require(post.mediaUrl))
            #expect(try Data(contentsOf: file) == photo)
            _ = try await tablet.media(url)
            #expect(calls.mediaCalls().count == 1, "the second read comes from the cache: media URLs are immutable")
        }
    }

    @Test("eight views asking for one image at once share one download: one GET, the same verified file for all")
    func oneDownloadPerMedium() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (phone, _) = try Self.client(server)
            try await phone.signUp(family: "Smith", username: "alice", password: "password1")
            let photo = Self.jpeg(2_000_000, seed: 3)
            let url = try await phone.upload(photo, contentType: "image/jpeg")
            try await phone.sync()
            let (tablet, calls) = try Self.client(server)
            try await tablet.logIn(username: "alice", password: "password1")
            let files = try await withThrowingTaskGroup(of: URL.self) { group in
                for _ in 0..<8 { group.addTask { try await tablet.media(url) } }
                return try await group.reduce(into: [URL]()) { $0.append($1) }
            }
            #expect(files.count == 8 && Set(files).count == 1)
            #expect(try Data(contentsOf: files[0]) == photo)
            #expect(calls.mediaCalls().count == 1, "\(calls.mediaCalls().count) downloads")
        }
    }

    @Test("a download cut halfway resumes with Range; the cache keeps at most its size, least recently used out")
    func resumeAndEvict() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (phone, _) = try Self.client(server)
            try await phone.signUp(family: "Smith", username: "alice", password: "password1")
            var urls: [String] = []
            var photos: [Data] = []
            for seed in 1...3 {
                let photo = Self.jpeg(400_000, seed: UInt8(seed))
                photos.append(photo)
                urls.append(try await phone.upload(photo, contentType: "image/jpeg"))
            }
            try await phone.push()
            let (tablet, calls) = try Self.client(server, cache: 1_000_000)
            try await tablet.logIn(username: "alice", password: "password1")
            // A cut download left the first half of the first photo.
            let sha = String(urls[0].dropFirst("/api/v1/media/".count))
            let replica = tablet.configuration.replicaPath
            #expect(FileManager.default.createFile(atPath: replica + ".media/" + sha + ".part", contents: photos[0].prefix(150_000)))
            let first = try await tablet.media(urls[0])
            #expect(try Data(contentsOf: first) == photos[0])
            #expect(calls.mediaCalls().first?.headers["Range"] == "bytes=150000-")
            // Three 400 KB photos in a 1 MB cache: the least recently used goes.
            _ = try await tablet.media(urls[1])
            _ = try await tablet.media(urls[2])
            let kept = try FileManager.default.contentsOfDirectory(atPath: replica + ".media")
            #expect(kept.count == 2 && !kept.contains(sha), "kept: \(kept)")
            // Asked again, it downloads again, whole.
            #expect(try Data(contentsOf: try await tablet.media(urls[0])) == photos[0])
            print("sdk: media cache test: 3 media of 400,000 bytes in a 1,000,000-byte cache; a resumed download of 250,000 bytes")
        }
    }

    @Test("a medium past mediaMaxBytes is neither uploaded nor kept when downloaded: the device never fills")
    func sizeLimit() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (phone, _) = try Self.client(server)
            try await phone.signUp(family: "Smith", username: "alice", password: "password1")
            let url = try await phone.upload(Self.jpeg(300_000, seed: 3), contentType: "image/jpeg")
            try await phone.push()
            var configuration = SyncClientConfiguration(serverURL: server.base, replicaPath: LiveServer.replicaPath())
            configuration.pushDelay = nil
            configuration.mediaMaxBytes = 200_000
            let tablet = try SyncClient(configuration: configuration)
            try await tablet.logIn(username: "alice", password: "password1")
            await #expect(throws: SyncClientError.self) { try await tablet.media(url) }
            let folder = configuration.replicaPath + ".media"
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty, "no part left behind")
            await #expect(throws: SyncClientError.self) { try await tablet.upload(Self.jpeg(200_001, seed: 4), contentType: "image/jpeg") }
            #expect(tablet.status.pendingWrites == 0)
        }
    }

    @Test("a type the server does not take is a failed upload, not a stuck queue; sign-out forgets the media")
    func refusedAndErased() async throws {
        try await LiveServer.run(.sqlite) { server in
            let (phone, _) = try Self.client(server)
            try await phone.signUp(family: "Smith", username: "alice", password: "password1")
            _ = try await phone.upload(Data("not a picture".utf8), contentType: "image/jpeg")
            try await phone.save(.contacts, id: "c1", json: ["firstName": "Ann"])
            let report = try await phone.sync()
            #expect(report.pushed == 1)
            #expect(try phone.failedUploads().map(\.status) == [415])
            #expect(phone.status.pendingWrites == 0 && phone.status.failedWrites == 1)
            try await phone.logOut()
            let folder = phone.configuration.replicaPath + ".media"
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
            #expect(try phone.failedUploads().isEmpty)
        }
    }
}
