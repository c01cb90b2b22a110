import Foundation
import Logging
import TestSupport
import Testing

@testable import SyncAPI

/// A group's deltas read ahead in one statement on PostgreSQL (issue 19, item 2): each answers exactly what the
/// delta statement answers alone in the same snapshot, and a run of several deltas costs one statement, not one each.
@Suite("PostgreSQL deltas of a group in one statement")
struct PostgresDeltaPrefetchTests {
    @Test("prefetched deltas answer what each delta answers alone, for 200 random sets of calls; one statement for four")
    func sameAnswersOneStatement() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL(logStatements: true)
        let opened = try OpenedStore.open(try DatabaseURL(parsing: url), logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            try await opened.store.migrate()
            let store = try #require(opened.store as? PostgresStore)
            let session = try await ConcurrencyTests.newFamily(store)
            let other = try await ConcurrencyTests.newFamily(store)
            var random = SplitMix(seed: 23)
            let collections = ["contacts", "events", "places", "members"]
            // 80 writes: creations, rewrites and deletions (tombstones) across four lists, and some in another family.
            for n in 0..<80 {
                let family = random.next(8) == 0 ? other : session
                let key = ItemKey(collection: collections[random.next(collections.count)], id: "i\(random.next(12))")
                let row = RowWrite(key: key, body: random.next(5) == 0 ? nil : #"{"n":\#(n)}"#)
                _ = try await store.write(familyID: family.familyID, key: key, parent: nil, nowMs: Int64(n)) { _ in .write([row]) }
            }
            let version = try await store.delta(familyID: session.familyID, collections: [], since: nil).version
            for _ in 0..<200 {
                let requests = (0..<(2 + random.next(4))).map { _ in
                    DeltaRequest(
                        familyID: session.familyID,
                        collections: Self.someOf(collections, &random),
                        since: random.next(4) == 0 ? nil : Int64(random.next(Int(version) + 2)))
                }
                try await store.withReadSnapshot { pinned in
                    let prefetched = try await pinned.prefetchingDeltas(requests)
                    #expect((prefetched as? PostgresStore)?.prefetched.count == Set(requests).count)
                    for request in requests {
                        let ahead = try await prefetched.delta(familyID: request.familyID, collections: request.collections, since: request.since)
                        let alone = try await (pinned as! PostgresStore).readDelta(
                            familyID: request.familyID, collections: request.collections, since: request.since)
                        #expect(
                            ahead.version == alone.version && ahead.horizon == alone.horizon && ahead.rows == alone.rows,
                            "\(request.collections) since \(request.since.map(String.init) ?? "nil")")
                    }
                }
            }
            // A family that does not exist: nothing is read ahead, and the call answers as it always did.
            try await store.withReadSnapshot { pinned in
                let requests = [
                    DeltaRequest(familyID: "no-such-family", collections: ["contacts"], since: 1),
                    DeltaRequest(familyID: "no-such-family", collections: ["events"], since: 1),
                ]
                let prefetched = try await pinned.prefetchingDeltas(requests)
                #expect((prefetched as? PostgresStore)?.prefetched.isEmpty == true)
                await #expect(throws: SyncError.self) { try await prefetched.delta(familyID: "no-such-family", collections: ["contacts"], since: 1) }
            }
            // Four deltas of one run: one statement naming the family.
            let log = try await TestPostgres.shared.log()
            let before = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
            try await store.withReadSnapshot { pinned in
                let requests = collections.map { DeltaRequest(familyID: session.familyID, collections: [$0], since: 2) }
                let prefetched = try await pinned.prefetchingDeltas(requests)
                for request in requests { _ = try await prefetched.delta(familyID: session.familyID, collections: request.collections, since: 2) }
            }
            try await Task.sleep(for: .milliseconds(300))
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: log))
            try handle.seek(toOffset: UInt64(before))
            let lines = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n")
            let statements = lines.filter { $0.contains("parameters:") && $0.contains("'\(session.familyID)'") }.count
            #expect(statements == 1, "four deltas of a run took \(statements) statements")
        }
    }

    /// One to all of `names`, in their order.
    static func someOf(_ names: [String], _ random: inout SplitMix) -> [String] {
        let some = names.filter { _ in random.next(2) == 0 }
        return some.isEmpty ? [names[random.next(names.count)]] : some
    }
}
