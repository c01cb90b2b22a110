import Crypto
import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SyncAPI
import SyncStorage
import TestSupport
import Testing

/// Media (protocol §10) on both backends: upload, dedupe, conditional and ranged reads, isolation between families,
/// type and size refusal, media URLs in items, groups, and the purge that keeps named media.
@Suite("Media over HTTP", .sharingTheMachine)
struct MediaHTTPTests {
    /// A small JPEG-signed file of `count` bytes.
    static func jpeg(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        [0xFF, 0xD8, 0xFF, 0xE0] + (0..<max(0, count - 4)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    static func upload(
        _ client: any TestClientProtocol, token: String, _ bytes: [UInt8], type: String = "image/jpeg"
    ) async throws
        -> TestResponse
    {
        try await client.executeRequest(
            uri: "/api/v1/media", method: .post, headers: [.authorization: "Bearer \(token)", .contentType: type],
            body: ByteBuffer(bytes: bytes))
    }

    static func get(
        _ client: any TestClientProtocol, token: String, _ path: String, _ headers: HTTPFields = [:]
    ) async throws
        -> TestResponse
    {
        var headers = headers
        headers[.authorization] = "Bearer \(token)"
        return try await client.executeRequest(uri: path, method: .get, headers: headers, body: nil)
    }

    @Test("upload, dedupe, GET with cache headers, 304, ranges, HEAD, isolation", arguments: Backend.allCases)
    func uploadAndRead(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let alice = try #require(try await APIClient.signedUp(client).token)
            let bytes = Self.jpeg(700_000)
            let sha = Hex.lowercase(SHA256.hash(data: Data(bytes)))
            let first = try await Self.upload(client, token: alice, bytes)
            #expect(first.status == .created)
            let answer = try JSONParser.parse(first.body.readableBytesView)
            #expect(answer["url"] == .string("/api/v1/media/\(sha)"))
            #expect(answer["sha256"] == .string(sha) && answer["size"] == .number(700_000) && answer["contentType"] == .string("image/jpeg"))
            let again = try await Self.upload(client, token: alice, bytes)
            #expect(again.status == .created, "the same bytes are the same URL (201 as protocol §10 says), stored once")
            #expect(try JSONParser.parse(again.body.readableBytesView)["url"] == answer["url"])

            let path = "/api/v1/media/\(sha)"
            let whole = try await Self.get(client, token: alice, path)
            #expect(whole.status == .ok)
            #expect(Array(whole.body.readableBytesView) == bytes)
            #expect(whole.headers[.eTag] == "\"\(sha)\"")
            #expect(whole.headers[.cacheControl] == "private, max-age=31536000, immutable")
            #expect(whole.headers[.contentType] == "image/jpeg")
            #expect(whole.headers[.contentLength] == "700000")
            #expect(try await Self.get(client, token: alice, path, [.ifNoneMatch: "\"\(sha)\""]).status == .notModified)

            // Ranges across chunk boundaries (256 KiB chunks in PostgreSQL).
            for (header, range) in [
                ("bytes=2-5", 2..<6), ("bytes=262140-262150", 262_140..<262_151), ("bytes=-3", 699_997..<700_000),
                ("bytes=600000-", 600_000..<700_000),
            ] {
                let part = try await Self.get(client, token: alice, path, [.range: header])
                #expect(part.status == .partialContent, "\(header)")
                #expect(Array(part.body.readableBytesView) == Array(bytes[range]), "\(header)")
                #expect(part.headers[.contentRange] == "bytes \(range.lowerBound)-\(range.upperBound - 1)/700000")
            }
            let outside = try await Self.get(client, token: alice, path, [.range: "bytes=700000-"])
            #expect(outside.status == .rangeNotSatisfiable && outside.headers[.contentRange] == "bytes */700000")

            let head = try await client.executeRequest(uri: path, method: .head, headers: [.authorization: "Bearer \(alice)"], body: nil)
            #expect(head.status == .ok && head.body.readableBytes == 0 && head.headers[.eTag] == "\"\(sha)\"")

            // Another family's hash answers exactly like an unknown one.
            let bob = try #require(try await APIClient.signedUp(client, username: "bob", family: "Jones").token)
            let foreign = try await Self.get(client, token: bob, path)
            let unknown = try await Self.get(client, token: bob, "/api/v1/media/" + String(repeating: "0", count: 64))
            #expect(foreign.status == .notFound && unknown.status == .notFound)
            #expect(String(buffer: foreign.body) == String(buffer: unknown.body))
            #expect(try await Self.get(client, token: bob, "/api/v1/media/not-a-hash").status == .notFound)
        }
    }

    @Test("type and size are checked against the bytes: 415 and 413, nothing stored", arguments: Backend.allCases)
    func refusals(backend: Backend) async throws {
        try await TestApp.run(backend, configure: { $0.mediaMaxBytes = 4096 }) { client in
            let token = try #require(try await APIClient.signedUp(client).token)
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100)
            for (bytes, type) in [
                (Self.jpeg(100), "image/png"), (Self.jpeg(100), "text/plain"), (Array("hello".utf8), "image/jpeg"), ([], "image/jpeg"),
            ] {
                let refused = try await Self.upload(client, token: token, bytes, type: type)
                #expect(refused.status == .unsupportedMediaType, "\(type)")
                #expect(try JSONParser.parse(refused.body.readableBytesView)["code"] == .string("unsupported_media_type"))
            }
            #expect(try await Self.upload(client, token: token, png, type: "image/png").status == .created)
            let big = try await Self.upload(client, token: token, Self.jpeg(5000))
            #expect(big.status == .contentTooLarge)
            let sha = Hex.lowercase(SHA256.hash(data: Data(Self.jpeg(5000))))
            #expect(try await Self.get(client, token: token, "/api/v1/media/\(sha)").status == .notFound)
            let description = try await Self.get(client, token: token, "/api/v1/")
            let limits = try JSONParser.parse(description.body.readableBytesView)
            #expect(limits["mediaMaxBytes"] == .number(4096))
        }
    }

    @Test("media URLs in items; media inside a group are refused")
    func itemsAndGroups() async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            let token = try #require(api.token)
            let url = try #require(
                try JSONParser.parse(try await Self.upload(client, token: token, Self.jpeg(64)).body.readableBytesView)["url"]?.stringValue)
            let post = try await api.call(.put, "/api/v1/wall/p1", body: #"{"type":"photo","mediaUrl":"\#(url)"}"#)
            #expect(post.status == .ok && post.json?["mediaUrl"] == .string(url))
            #expect(try await api.call(.put, "/api/v1/family", body: #"{"name":"F","pictureUrl":"\#(url)"}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/wall/p2", body: #"{"type":"photo","mediaUrl":"/api/v1/media/xyz"}"#).status == .badRequest)
            let group = try await api.call(.post, "/api/v1/group", body: #"{"requests":[{"id":"m","method":"GET","url":"\#(url)"}]}"#)
            guard case .array(let responses)? = group.json?["responses"] else {
                Issue.record("no responses: \(group.body)")
                return
            }
            #expect(responses.first?["body"]?["code"] == .string("invalid_subrequest"))
        }
    }

    /// A signed-up client of an app on a fresh database, and a second store opened on that database, so that a test
    /// purges as the server's purger would, at times of its choosing.
    struct PurgeSetUp {
        let client: any TestClientProtocol
        let api: APIClient
        let token: String
        let opened: OpenedStore
        let logger: Logger
        /// The application's clock, moved by the test (it starts at the wall clock's time).
        let clock: ManualWallClock

        /// Uploads a JPEG-signed file; returns its URL.
        func upload(_ count: Int, seed: UInt8) async throws -> String {
            let answer = try await MediaHTTPTests.upload(client, token: token, MediaHTTPTests.jpeg(count, seed: seed))
            return try #require(try JSONParser.parse(answer.body.readableBytesView)["url"]?.stringValue)
        }

        func get(_ path: String) async throws -> TestResponse { try await MediaHTTPTests.get(client, token: token, path) }
    }

    static func withPurgeSetUp(_ backend: Backend, _ body: @escaping @Sendable (PurgeSetUp) async throws -> Void) async throws {
        let url = try await backend.freshDatabaseURL()
        var configuration = try await TestApp.configuration(backend)
        configuration.database = url
        let clock = ManualWallClock()
        configuration.clock = { clock.now() }
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        let logger = quiet
        let app = try await buildApplication(configuration, logger: logger)
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let api = try await APIClient.signedUp(client)
            let opened = try OpenedStore.open(url, deadline: testDeadline, timers: testTimers, logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await opened.runClient() }
                defer { group.cancelAll() }
                try await body(
                    PurgeSetUp(client: client, api: api, token: try #require(api.token), opened: opened, logger: logger, clock: clock))
            }
        }
    }

    @Test("the purge removes media no item names and keeps named ones", arguments: Backend.allCases)
    func purge(backend: Backend) async throws {
        try await Self.withPurgeSetUp(backend) { setUp in
            let named = try await setUp.upload(300_000, seed: 1)
            let unnamed = try await setUp.upload(300_000, seed: 2)
            _ = try await setUp.api.call(.put, "/api/v1/wall/p1", body: #"{"type":"photo","mediaUrl":"\#(named)"}"#)
            // A purge as if the retention had passed since both uploads: the wall post names one of them now.
            let now = WallClock.nowMs()
            let purged = try await setUp.opened.media.purgeMedia(cutoffMs: now + 1000, nowMs: now + 2000)
            #expect(purged == 1)
            #expect(try await setUp.get(named).status == .ok)
            #expect(try await setUp.get(unnamed).status == .notFound)
        }
    }

    @Test("media named in any collection (a message, a contact's notes) survives the purge (code review D8)", arguments: Backend.allCases)
    func purgeKeepsMediaNamedAnywhere(backend: Backend) async throws {
        try await Self.withPurgeSetUp(backend) { setUp in
            let inMessage = try await setUp.upload(70_000, seed: 11)
            let inNotes = try await setUp.upload(70_000, seed: 12)
            let unnamed = try await setUp.upload(70_000, seed: 13)
            #expect(try await setUp.api.call(.put, "/api/v1/threads/t1", body: #"{"title":"T"}"#).status == .ok)
            let message = try await setUp.api.call(.put, "/api/v1/threads/t1/messages/m1", body: #"{"text":"look \#(inMessage)"}"#)
            #expect(message.status == .ok)
            let contact = try await setUp.api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A","notes":"\#(inNotes)"}"#)
            #expect(contact.status == .ok)
            // Past the retention of every upload and write: only what a live item names stays.
            let now = WallClock.nowMs()
            #expect(try await setUp.opened.media.purgeMedia(cutoffMs: now + 1000, nowMs: now + 2000) == 1)
            #expect(try await setUp.get(inMessage).status == .ok)
            #expect(try await setUp.get(inNotes).status == .ok)
            #expect(try await setUp.get(unnamed).status == .notFound)
            // The same bytes uploaded again after the purge are stored anew and served whole.
            let again = try await setUp.upload(70_000, seed: 13)
            let served = try await setUp.get(again)
            #expect(served.status == .ok && served.body.readableBytes == 70_000)
        }
    }

    @Test("a deleted post's file lasts as long as its tombstone: kept within the retention of the deletion, then gone", arguments: Backend.allCases)
    func deletedPostKeepsItsFile(backend: Backend) async throws {
        try await Self.withPurgeSetUp(backend) { setUp in
            let photo = try await setUp.upload(200_000, seed: 3)
            #expect(try await setUp.api.call(.put, "/api/v1/wall/p2", body: #"{"type":"photo","mediaUrl":"\#(photo)"}"#).status == .ok)
            let (early, late) = try await Self.purgesAroundDeletion(setUp, photo: photo, deleting: "/api/v1/wall/p2")
            #expect(early == 0 && late == 1)
        }
    }

    /// Security audit 651e0ee L4: a thread's delete tombstones its messages, but the photos they named kept the time
    /// of the messages' writes, so they went at the next purge instead of a retention after the delete.
    @Test("a thread's delete keeps its messages' photos as long as their tombstones", arguments: Backend.allCases)
    func cascadeKeepsChildrensFiles(backend: Backend) async throws {
        try await Self.withPurgeSetUp(backend) { setUp in
            let photo = try await setUp.upload(100_000, seed: 21)
            #expect(try await setUp.api.call(.put, "/api/v1/threads/t3", body: #"{"title":"T"}"#).status == .ok)
            let message = try await setUp.api.call(.put, "/api/v1/threads/t3/messages/m3", body: #"{"text":"look \#(photo)"}"#)
            #expect(message.status == .ok)
            let (early, late) = try await Self.purgesAroundDeletion(setUp, photo: photo, deleting: "/api/v1/threads/t3")
            #expect(early == 0 && late == 2)
        }
    }

    /// Deletes `path` once the application's clock has moved a second past the writes before it, then purges twice:
    /// a retention after those writes but not after the deletion (the photo must stay), and a retention after the
    /// deletion (it goes with the tombstones). Returns the rows each purge removed.
    static func purgesAroundDeletion(_ setUp: PurgeSetUp, photo: String, deleting path: String) async throws -> (Int, Int) {
        let beforeDeletion = setUp.clock.advance(byMs: 1_100)
        #expect(try await setUp.api.call(.delete, path).status == .noContent)
        let afterDeletion = setUp.clock.now()
        let retention = 3600
        let purger = TombstonePurger(store: setUp.opened.roles.purger, media: setUp.opened.media, retentionSeconds: retention, logger: setUp.logger)
        let early = try await purger.purgeOnce(nowMs: beforeDeletion - 100 + Int64(retention) * 1000)
        #expect(try await setUp.get(photo).status == .ok, "the file went a retention after the writes, not after the deletion")
        let late = try await purger.purgeOnce(nowMs: afterDeletion + 1000 + Int64(retention) * 1000)
        #expect(try await setUp.get(photo).status == .notFound, "the file outlived its tombstone's retention")
        return (early, late)
    }
}
