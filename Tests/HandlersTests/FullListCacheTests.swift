import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SyncAPI
import TestSupport
import Testing

/// Issue 57, item 1: a full list without a date answered from the answers kept by date (`FullListCache`) is the same
/// bytes as the one read from the database, after every kind of write, on both backends; a write is never answered
/// with the list as it was before it.
@Suite("Full lists kept by date")
struct FullListCacheTests {
    /// The `syncapi_full_list_cache_hits` gauge.
    static func hits(_ api: APIClient) async throws -> Int {
        let metrics = try await APIClient(client: api.client).call(.get, "/metrics").body
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("syncapi_full_list_cache_hits ") }
        return Int(Double(line?.split(separator: " ").last ?? "") ?? -1)
    }

    /// Reads the full list twice: from the database (kept), then from the cache; returns the bytes after checking
    /// that both are the same and that the second was a hit.
    static func readTwice(_ api: APIClient, _ path: String, _ step: String) async throws -> String {
        let before = try await hits(api)
        let read = try await api.call(.get, path)
        #expect(read.status == .ok, "\(step)")
        let kept = try await api.call(.get, path)
        #expect(kept.body == read.body, "\(step): the kept answer differs from the one read")
        #expect(kept.headers[.eTag] == read.headers[.eTag], "\(step)")
        #expect(try await hits(api) == before + 1, "\(step): the second read was not answered from the cache")
        return read.body
    }

    static func ids(_ body: String) -> [String] {
        guard case .array(let items) = (try? JSONParser.parse(body))?["updated"] ?? .null else { return [] }
        return items.compactMap { $0["id"]?.stringValue }.sorted()
    }

    @Test("every kind of write: the kept answer is the read one, and the next read sees the write", arguments: Backend.allCases)
    func afterEveryWrite(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live) { client in
            let api = try await APIClient.signedUp(client)
            var body = try await Self.readTwice(api, "/api/v1/ctcsync", "empty list")
            #expect(Self.ids(body) == [])
            // (what, the write, the contacts after it)
            let steps: [(String, HTTPRequest.Method, String, String?, [String])] = [
                ("create", .put, "/api/v1/contacts/c1", #"{"firstName":"Ann"}"#, ["c1"]),
                ("create another", .put, "/api/v1/contacts/c2", #"{"firstName":"Ben"}"#, ["c1", "c2"]),
                ("replace", .put, "/api/v1/contacts/c1", #"{"firstName":"Anna"}"#, ["c1", "c2"]),
                ("patch", .patch, "/api/v1/contacts/c2", #"{"lastName":"Bo"}"#, ["c1", "c2"]),
                ("delete", .delete, "/api/v1/contacts/c1", nil, ["c2"]),
                ("another list", .put, "/api/v1/events/e1", #"{"title":"Party","start":"2026-12-01T18:00:00Z"}"#, ["c2"]),
                (
                    "in a group", .post, "/api/v1/group",
                    #"{"requests":[{"id":"a","method":"PUT","url":"/api/v1/contacts/c3","body":{"firstName":"Cy"}}]}"#, ["c2", "c3"]
                ),
                ("recreate", .put, "/api/v1/contacts/c1", #"{"firstName":"Ann"}"#, ["c1", "c2", "c3"]),
            ]
            for (step, method, path, payload, expected) in steps {
                let previous = body
                let write = try await api.call(method, path, body: payload)
                #expect(write.status.code / 100 == 2, "\(step): \(write.status) \(write.body)")
                body = try await Self.readTwice(api, "/api/v1/ctcsync", step)
                #expect(body != previous, "\(step): answered with the list as it was before the write")
                #expect(Self.ids(body) == expected, "\(step)")
            }
            // The edited contents are the ones read.
            #expect(body.contains(#""lastName":"Bo""#) && !body.contains("Anna"))
            // A conditional read of the kept date is 304.
            let etag = try await api.call(.get, "/api/v1/ctcsync").headers[.eTag] ?? ""
            #expect(try await api.call(.get, "/api/v1/ctcsync", headers: [.ifNoneMatch: etag]).status == .notModified)
            // Inside a group's snapshot, a kept answer is the same bytes too.
            let group = try await api.call(.post, "/api/v1/group", body: #"{"requests":[{"id":"l","method":"GET","url":"/api/v1/ctcsync"}]}"#)
            #expect(group.status == .ok && group.body.contains(body), "the group's full list differs from the kept one")
        }
    }

    @Test("a date that cannot be answered is answered by the kept list too", arguments: Backend.allCases)
    func unanswerableDate(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live) { client in
            let api = try await APIClient.signedUp(client)
            _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#)
            let whole = try await Self.readTwice(api, "/api/v1/ctcsync", "whole")
            let forged = try await api.call(.get, "/api/v1/ctcsync?date=someone-elses-date")
            #expect(forged.body == whole)
        }
    }

    @Test("the cache keeps no more than its capacity and drops the least recently used first")
    func bounded() {
        // Each entry holds 111 bytes: its body (100) and its key ("d00": 3, "contacts": 8).
        let cache = FullListCache(capacity: 64 * 111)
        #expect(cache.entryLimit == 888 && cache.recordingLimit == 1776)
        for n in 0..<64 { cache.keep([UInt8](repeating: 1, count: 100), date: "d\(n < 10 ? "0" : "")\(n)", collection: "contacts") }
        #expect(cache.usage.answers == 64 && cache.usage.bytes == 64 * 111)
        // Read, d0 is the most recently used; the next answer takes the cache past its capacity, and the least
        // recently used go until a tenth is free: d1 to d8.
        _ = cache.answer(date: "d00", collection: "contacts")
        cache.keep([UInt8](repeating: 1, count: 100), date: "d64", collection: "contacts")
        #expect(cache.usage.bytes <= 64 * 111 - 710 && cache.usage.answers == 57)
        #expect(cache.answer(date: "d00", collection: "contacts") != nil && cache.answer(date: "d64", collection: "contacts") != nil)
        #expect((1...8).allSatisfy { cache.answer(date: "d0\($0)", collection: "contacts") == nil })
        #expect(cache.answer(date: "d09", collection: "contacts") != nil)
        // Keys count: many small answers under long keys (ranges of deltas) stay within the capacity.
        let keyed = FullListCache(capacity: 64 * 111)
        for n in 0..<1000 { keyed.keep([1], date: String(repeating: "k", count: 200) + "\(n)", collection: "contacts") }
        #expect(keyed.usage.bytes <= 64 * 111 && keyed.usage.answers < 40)
        // Too large, or a list private to each account: never kept.
        cache.keep([UInt8](repeating: 1, count: 889), date: "big", collection: "contacts")
        cache.keep([1], date: "d71", collection: "notes~account")
        #expect(cache.answer(date: "big", collection: "contacts") == nil && cache.answer(date: "d71", collection: "notes~account") == nil)
        #expect(FullListCache(capacity: 0).keeps("contacts") == false)
        #expect(FullListCache().entryLimit == 4 << 20 && FullListCache().recordingLimit == 8 << 20)
    }

    @Test("copies of answers being streamed hold at most the recording budget together, and give it back however they end")
    func recordingBudget() {
        let cache = FullListCache(capacity: 8 << 10)  // entries up to 1 KiB, copies in flight up to 2 KiB together
        let chunk = ByteBuffer(repeating: 7, count: 400)
        let first = FullListRecorder(cache: cache, collection: "contacts")
        let second = FullListRecorder(cache: cache, collection: "contacts")
        first.start(date: "a")
        second.start(date: "b")
        for _ in 0..<2 {
            first.add(chunk)
            second.add(chunk)
        }
        #expect(cache.recordingBytes == 1600)
        // A third copy finds the budget short (1,600 + 800 > 2,048): it stops and gives back what it held.
        var third: FullListRecorder? = FullListRecorder(cache: cache, collection: "contacts")
        third!.start(date: "c")
        third!.add(chunk)
        third!.add(chunk)
        #expect(cache.recordingBytes == 1600 + 400 - 400)
        // Past the entry limit (1,200 > 1,024) a copy stops too; the one that ends whole is kept.
        first.add(chunk)
        #expect(cache.recordingBytes == 800)
        second.end()
        #expect(cache.recordingBytes == 0 && cache.usage.answers == 1)
        #expect(cache.answer(date: "b", collection: "contacts")?.count == 800)
        first.end()
        #expect(cache.answer(date: "a", collection: "contacts") == nil)
        // A copy dropped midway (its client gone) gives its bytes back.
        third!.start(date: "d")
        third!.add(chunk)
        #expect(cache.recordingBytes == 400)
        third = nil
        #expect(cache.recordingBytes == 0)
    }
}
