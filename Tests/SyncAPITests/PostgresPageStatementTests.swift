import Foundation
import Logging
@_spi(StoreTesting) import SyncStorage
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncPostgres

/// PostgreSQL answers a paginated sync, a page and a full list in one statement each (issue 19). The one statement
/// must answer exactly what the shared orchestration answers from the same data (it still serves SQLite, and is
/// the reference here): random lists with ties in the sort key, tombstones, tags and children, asked from every
/// kind of place (no anchor, a live one, a deleted one, an unknown one) and date.
@Suite("PostgreSQL pages in one statement", .sharingTheMachine)
struct PostgresPageStatementTests {
    @Test("a page sync and a page answer what the orchestration answers, for 400 random questions and byte budgets")
    func sameAnswers() async throws {
        let opened = try OpenedStore.open(
            try await Backend.postgres.freshDatabaseURL(), deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            try await opened.roles.evolution.migrate()
            let store = try #require(opened.store as? PostgresStore)
            let session = try await ConcurrencyTests.newFamily(store)
            var random = SplitMix(seed: 19)
            var ids: [String] = []
            // 60 writes: parents with few distinct sort keys (ties broken by id), tags, children, moves and deletes.
            for n in 0..<60 {
                let parent = ids.isEmpty || random.next(3) > 0 ? "p\(random.next(25))" : ids[random.next(ids.count)]
                if !ids.contains(parent) { ids.append(parent) }
                let deleting = random.next(6) == 0
                let row = RowWrite(
                    key: ItemKey(collection: "wall", id: parent), body: deleting ? nil : #"{"n":\#(n)}"#,
                    sortMs: Int64(random.next(8)), sortMoved: true, tag: ["a", "b", "c"][random.next(3)],
                    deleteChildren: deleting ? "comments" : nil)
                _ = try await store.write(spaceID: session.spaceID, key: row.key, parent: nil, nowMs: Int64(n)) { _ in .write([row]) }
                for c in 0..<random.next(4) where !deleting {
                    let child = RowWrite(
                        key: ItemKey(collection: "comments", parentID: parent, id: "c\(n)-\(c)"), body: "{}", sortMs: Int64(random.next(5)),
                        sortMoved: true)
                    _ = try await store.write(spaceID: session.spaceID, key: child.key, parent: row.key, nowMs: Int64(n)) { _ in
                        .write([child])
                    }
                }
            }
            let version = try await store.delta(spaceID: session.spaceID, collections: ["wall"], since: nil).version
            for _ in 0..<400 {
                let anchor: String? = [nil, ids[random.next(ids.count)], "unknown"][random.next(3)]
                let query = PageQuery(
                    collection: "wall", anchorID: anchor, limit: 1 + random.next(8),
                    tags: random.next(3) == 0 ? [["a"], ["b", "c"], []][random.next(3)] : nil,
                    children: random.next(2) == 0 ? ChildrenQuery(collection: "comments", limit: 1 + random.next(3)) : nil,
                    // Bodies of 8 or 9 bytes, children of 2: budgets that cut nothing, the list or the children.
                    byteBudget: [PageQuery.defaultByteBudget, 4, 12, 20, 40][random.next(5)])
                let since: Int64? = random.next(5) == 0 ? nil : Int64(random.next(Int(version) + 2))
                let one = try await store.pageSync(spaceID: session.spaceID, query: query, since: since)
                let reference = try await store.readPageSync(spaceID: session.spaceID, query: query, since: since)
                #expect(Self.same(one, reference), "page sync \(query) since \(since.map(String.init) ?? "nil")")
                let page = try await store.page(spaceID: session.spaceID, query: query)
                let referencePage = try await store.readPage(spaceID: session.spaceID, query: query)
                #expect(page?.items == referencePage?.items && page?.children == referencePage?.children, "page \(query)")
            }
            await #expect(throws: SyncError.self) {
                try await store.pageSync(
                    spaceID: "no-such-family", query: PageQuery(collection: "wall", anchorID: nil, limit: 5, tags: nil, children: nil), since: 1)
            }
        }
    }

    @Test("a page sync, a page, a delta and a full list are one statement each, with no transaction around them")
    func oneStatementEach() async throws {
        let url = try await TestPostgres.shared.newDatabaseURL(logStatements: true)
        let opened = try OpenedStore.open(try DatabaseURL(parsing: url), deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            try await opened.roles.evolution.migrate()
            let store = opened.store
            let session = try await ConcurrencyTests.newFamily(store)
            for n in 0..<3 {
                let row = RowWrite(key: ItemKey(collection: "threads", id: "t\(n)"), body: "{}", sortMs: Int64(n), sortMoved: true)
                _ = try await store.write(spaceID: session.spaceID, key: row.key, parent: nil, nowMs: 0) { _ in .write([row]) }
            }
            func logged(_ body: () async throws -> Void) async throws -> (statements: Int, transactions: Int) {
                try await StatementLog.counted(database: url, naming: session.spaceID, during: body)
            }
            let query = PageQuery(
                collection: "threads", anchorID: "t1", limit: 2, tags: nil, children: ChildrenQuery(collection: "messages", limit: 3))
            let pageSync = try await logged { _ = try await store.pageSync(spaceID: session.spaceID, query: query, since: 1) }
            let page = try await logged { _ = try await store.page(spaceID: session.spaceID, query: query) }
            let delta = try await logged { _ = try await store.delta(spaceID: session.spaceID, collections: ["contacts"], since: 1) }
            let full = try await logged {
                try await store.streamLiveRows(spaceID: session.spaceID, collection: "threads", start: { _ in }, page: { _ in })
            }
            print("statements (transactions): page sync \(pageSync), page \(page), delta \(delta), full list \(full)")
            #expect(pageSync.statements == 1 && page.statements == 1 && delta.statements == 1 && full.statements == 1)
            #expect(pageSync.transactions == 0 && page.transactions == 0 && delta.transactions == 0 && full.transactions == 0)
            // A write is one transaction: the count sees the ones there are.
            let row = RowWrite(key: ItemKey(collection: "threads", id: "t9"), body: "{}", sortMs: 9, sortMoved: true)
            let write = try await logged {
                _ = try await store.write(spaceID: session.spaceID, key: row.key, parent: nil, nowMs: 0) { _ in .write([row]) }
            }
            #expect(write.transactions == 1, "\(write)")
        }
    }

    /// Field by field (`PageSyncRows` is not `Equatable`: nothing else compares it).
    static func same(_ a: PageSyncRows, _ b: PageSyncRows) -> Bool {
        a.version == b.version && a.horizon == b.horizon && a.anchor == b.anchor && a.changed == b.changed && a.top == b.top
            && a.belowAnchor == b.belowAnchor && a.bottom == b.bottom && a.deleted == b.deleted && a.children == b.children
            && a.firstPage == b.firstPage
    }
}
