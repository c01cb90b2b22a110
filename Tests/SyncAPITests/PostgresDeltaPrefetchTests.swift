import Foundation
import Logging
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// A group's deltas read ahead in one statement on PostgreSQL (issue 19, item 2): each answers exactly what the
/// delta statement answers alone in the same snapshot, and a run of several deltas costs one statement, not one each.
@Suite("PostgreSQL deltas of a group in one statement", .sharingTheMachine)
struct PostgresDeltaPrefetchTests {
    @Test("prefetched deltas answer what each delta answers alone, for 200 random sets of calls; one statement for four")
    func sameAnswersOneStatement() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL(logStatements: true)
        try await Backend.withStore(at: try DatabaseURL(parsing: url)) { opened in
            let store = try #require(opened as? PostgresStore)
            let session = try await ConcurrencyTests.newFamily(store)
            let other = try await ConcurrencyTests.newFamily(store)
            var random = SplitMix(seed: 23)
            let collections = ["contacts", "events", "places", "members"]
            // 80 writes: creations, rewrites and deletions (tombstones) across four lists, and some in another family.
            for n in 0..<80 {
                let family = random.next(8) == 0 ? other : session
                let key = ItemKey(collection: collections[random.next(collections.count)], id: "i\(random.next(12))")
                let row = RowWrite(key: key, body: random.next(5) == 0 ? nil : #"{"n":\#(n)}"#)
                _ = try await store.write(spaceID: family.spaceID, key: key, parent: nil, nowMs: Int64(n)) { _ in .write([row]) }
            }
            let version = try await store.delta(spaceID: session.spaceID, collections: [], since: nil).version
            for _ in 0..<200 {
                let requests = (0..<(2 + random.next(4))).map { _ in
                    DeltaRequest(
                        spaceID: session.spaceID,
                        collections: Self.someOf(collections, &random),
                        since: random.next(4) == 0 ? nil : Int64(random.next(Int(version) + 2)))
                }
                try await store.withReadSnapshot { pinned in
                    let prefetched = try await pinned.prefetchingDeltas(requests)
                    #expect((prefetched as? PostgresSnapshot)?.store.prefetched.count == Set(requests).count)
                    for request in requests {
                        let ahead = try await prefetched.delta(spaceID: request.spaceID, collections: request.collections, since: request.since)
                        let alone = try await (pinned as! PostgresSnapshot).store.readDelta(
                            spaceID: request.spaceID, collections: request.collections, since: request.since)
                        #expect(
                            ahead.version == alone.version && ahead.horizon == alone.horizon && ahead.rows == alone.rows,
                            "\(request.collections) since \(request.since.map(String.init) ?? "nil")")
                    }
                }
            }
            // A family that does not exist: nothing is read ahead, and the call answers as it always did.
            try await store.withReadSnapshot { pinned in
                let requests = [
                    DeltaRequest(spaceID: "no-such-family", collections: ["contacts"], since: 1),
                    DeltaRequest(spaceID: "no-such-family", collections: ["events"], since: 1),
                ]
                let prefetched = try await pinned.prefetchingDeltas(requests)
                #expect((prefetched as? PostgresSnapshot)?.store.prefetched.isEmpty == true)
                await #expect(throws: SyncError.self) { try await prefetched.delta(spaceID: "no-such-family", collections: ["contacts"], since: 1) }
            }
            // More changed rows than the bound: nothing is read ahead (the run reads its deltas one at a time), and
            // what the bound let through is dropped.
            try await store.withReadSnapshot { pinned in
                let conn = try #require(pinned as? PostgresSnapshot).connection
                let requests = collections.map { DeltaRequest(spaceID: session.spaceID, collections: [$0], since: nil) }
                let all = try #require(
                    try await PostgresStore.deltas(
                        of: requests, spaceID: session.spaceID, limit: 10_000, conn: conn, prepared: true, logger: Logger(label: "test")))
                let rows = all.values.reduce(0) { $0 + $1.rows.values.reduce(0) { $0 + $1.count } }
                #expect(rows > 5)
                let bounded = try await PostgresStore.deltas(
                    of: requests, spaceID: session.spaceID, limit: rows - 1, conn: conn, prepared: true, logger: Logger(label: "test"))
                #expect(bounded == nil)
                // The bound counts statement rows: the changed items, plus one empty row per collection without any.
                let within = try await PostgresStore.deltas(
                    of: requests, spaceID: session.spaceID, limit: rows + requests.count, conn: conn, prepared: true,
                    logger: Logger(label: "test"))
                #expect(within?.count == requests.count)
                // The pinned connection is left clean: the snapshot reads on.
                _ = try await pinned.delta(spaceID: session.spaceID, collections: ["contacts"], since: nil)
            }
            // Four deltas of one run: one statement naming the family.
            let (statements, _) = try await StatementLog.counted(database: url, naming: session.spaceID) {
                try await store.withReadSnapshot { pinned in
                    let requests = collections.map { DeltaRequest(spaceID: session.spaceID, collections: [$0], since: 2) }
                    let prefetched = try await pinned.prefetchingDeltas(requests)
                    for request in requests { _ = try await prefetched.delta(spaceID: session.spaceID, collections: request.collections, since: 2) }
                }
            }
            #expect(statements == 1, "four deltas of a run took \(statements) statements")
        }
    }

    /// One to all of `names`, in their order.
    static func someOf(_ names: [String], _ random: inout SplitMix) -> [String] {
        let some = names.filter { _ in random.next(2) == 0 }
        return some.isEmpty ? [names[random.next(names.count)]] : some
    }
}
