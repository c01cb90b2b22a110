import Foundation
import Logging
import PostgresNIO
@_spi(StoreTesting) import SyncStorage
import Synchronization
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// Deltas that wait for a connection are read together in one statement (`DeltaBatcher`, issue 19): each answer is
/// what its own statement answers, whatever the families, collections and dates batched with it; a request that is
/// cancelled while it waits leaves at once, and the others are answered.
@Suite("PostgreSQL deltas of concurrent requests read together", .sharingTheMachine)
struct DeltaBatcherTests {
    @Test("60 waiting deltas of 5 families and a missing one: one statement after the first, each answer as alone")
    func batchedAnswersAsAlone() async throws {
        try await Self.withOneConnection { store, batcher in
            let families = try await Self.seededFamilies(store, count: 5)
            let version = try await store.readDelta(spaceID: families[0], collections: [], since: nil).version
            var random = SplitMix(seed: 41)
            let calls = (0..<60).map { n in
                DeltaRequest(
                    spaceID: n == 7 ? "no-such-family" : families[random.next(families.count)],
                    collections: n == 11 ? [] : PostgresDeltaPrefetchTests.someOf(Self.collections, &random),
                    since: random.next(4) == 0 ? nil : Int64(random.next(Int(version) + 2)))
            }
            let answers = try await Self.whileTheConnectionIsHeld(store, until: { batcher.counts.waiting == calls.count - 1 }) {
                try await withThrowingTaskGroup(of: (Int, Delta?).self) { group in
                    for (n, call) in calls.enumerated() {
                        group.addTask { (n, try await batcher.delta(call, prepared: n % 2 == 0)) }
                    }
                    return try await group.reduce(into: [Int: Delta?]()) { $0[$1.0] = $1.1 }
                }
            }
            // The first call started its statement at once (it waited for the connection); the 59 others, one.
            #expect(batcher.counts.statements == 2)
            #expect(answers.count == calls.count)
            for (n, call) in calls.enumerated() {
                let batched = try #require(answers[n])
                if call.spaceID == "no-such-family" {
                    #expect(batched == nil)
                    continue
                }
                let alone = try await store.readDelta(spaceID: call.spaceID, collections: call.collections, since: call.since)
                let answer = try #require(batched, "call \(n)")
                #expect(
                    answer.version == alone.version && answer.horizon == alone.horizon && answer.rows == alone.rows,
                    "call \(n): \(call.collections) since \(call.since.map(String.init) ?? "nil")")
            }
            // The answers are not all alike: the batch mixed families, lists and dates.
            #expect(Set(answers.values.compactMap { $0?.rows.values.reduce(0) { $0 + $1.count } }).count > 3)
        }
    }

    @Test("a delta cancelled while it waits leaves at once; the statement before it and the one after answer")
    func cancelledWhileWaiting() async throws {
        try await Self.withOneConnection { store, batcher in
            let family = try await Self.seededFamilies(store, count: 1)[0]
            let call = DeltaRequest(spaceID: family, collections: ["contacts"], since: nil)
            let alone = try await store.readDelta(spaceID: family, collections: ["contacts"], since: nil)
            // The connection comes back once the cancellation has been checked (a poll of `waiting == 2` could miss
            // the moment: the cancellation follows it at once).
            let checked = Checked()
            try await Self.whileTheConnectionIsHeld(store, until: { checked.done.load(ordering: .acquiring) }) {
                async let first = batcher.delta(call, prepared: true)
                try #require(await eventually { batcher.counts.statements == 1 })
                let cancelled = Task { try await batcher.delta(call, prepared: true) }
                async let third = batcher.delta(call, prepared: true)
                try #require(await eventually { batcher.counts.waiting == 2 })
                cancelled.cancel()
                await #expect(throws: CancellationError.self) { try await cancelled.value }
                #expect(batcher.counts.waiting == 1)
                checked.done.store(true, ordering: .releasing)
                // Both started after the connection came back; the statement waiting for it, then the one after.
                let answers = try await [first, third]
                for answer in answers { #expect(answer?.rows == alone.rows) }
            }
            #expect(batcher.counts.statements == 2)
        }
    }

    /// Set by a test's body once it has checked what it needed while the connection was held.
    final class Checked: Sendable {
        let done = Atomic(false)
    }

    static let collections = ["contacts", "events", "places"]

    /// A migrated PostgreSQL store whose pool has one connection, and a batcher of one statement at a time on it, running.
    static func withOneConnection(_ body: @Sendable (PostgresStore, DeltaBatcher) async throws -> Void) async throws {
        let url = try await Backend.postgres.freshDatabaseURL()
        let opened = try OpenedStore.open(
            url, deadline: testDeadline, pool: PoolSize(connections: 1, snapshotConnections: nil), timers: testTimers, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            try await opened.roles.evolution.migrate()
            let store = try #require(opened.store as? PostgresStore)
            let batcher = DeltaBatcher(client: store.client, logger: store.logger, timers: testTimers, deadline: .seconds(10), maxRunning: 1)
            group.addTask { try await batcher.run() }
            try await body(store, batcher)
        }
    }

    /// Runs `body` while a task holds the pool's only connection, which it gives back once `ready` holds.
    static func whileTheConnectionIsHeld<T: Sendable>(
        _ store: PostgresStore, until ready: @escaping @Sendable () -> Bool, _ body: () async throws -> T
    ) async throws -> T {
        let (held, holding) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await store.client.withConnection { _ in
                holding.yield()
                try #require(await eventually(ready), "the deltas never queued")
            }
        }
        for await _ in held { break }
        let value = try await body()
        try await holder.value
        return value
    }

    /// `count` families with creations, rewrites and deletions in three lists.
    static func seededFamilies(_ store: PostgresStore, count: Int) async throws -> [String] {
        var families: [String] = []
        for _ in 0..<count { families.append(try await ConcurrencyTests.newFamily(store).spaceID) }
        var random = SplitMix(seed: 7)
        for n in 0..<90 {
            let family = families[random.next(families.count)]
            let key = ItemKey(collection: collections[random.next(collections.count)], id: "i\(random.next(10))")
            let row = RowWrite(key: key, body: random.next(5) == 0 ? nil : #"{"n":\#(n)}"#)
            _ = try await store.write(spaceID: family, key: key, parent: nil, nowMs: Int64(n)) { _ in .write([row]) }
        }
        return families
    }
}
