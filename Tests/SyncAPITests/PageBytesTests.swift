import SyncAPI
import TestSupport
import Testing

/// Security audit 651e0ee H2: a paginated sync and a page were built whole, up to 500 threads of 100 messages each,
/// bounded only by the family's quota. Their bodies now end at a byte budget, for the list and for the children, and
/// every cut is said (`nomore` false, or `crop` for changes that do not fit), so that a client following the protocol
/// gets every item once. On both backends, with a budget of 2,500 bytes and items of about 1,050.
@Suite("Page answers bounded by bytes", .sharingTheMachine)
struct PageBytesTests {
    static let text = String(repeating: "x", count: 1_000)

    @Test("pages end at the byte budget and say so; paging down gives every post and comment once", arguments: Backend.allCases)
    func pagesEndAtTheBudget(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry, pageBytes: 2_500)
            let session = try await ConcurrencyTests.newFamily(store)
            // w0 first, with five comments; then w1…w6, newer, above it on the wall.
            _ = try await engine.put(
                session, ItemAddress(Collections.wall, id: "w0"), body: .object([("type", .string("text")), ("text", .string(Self.text))]),
                preconditions: .init())
            for n in 0..<5 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.comments, parentID: "w0", id: "c\(n)"), body: .object([("text", .string(Self.text))]),
                    preconditions: .init())
            }
            for n in 1...6 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.wall, id: "w\(n)"), body: .object([("type", .string("text")), ("text", .string(Self.text))]),
                    preconditions: .init())
            }
            // The first page: two posts fit, and the wall goes on.
            let first = try PaginatedSyncTests.json(
                try await engine.pagedSync(session, Collections.wall, PageParameters(nb: 20), ifNoneMatch: nil).body)
            #expect(PaginatedSyncTests.ids(first["updated"]) == ["w6", "w5"])
            #expect(first["nomore"] == .bool(false) && first["crop"] == .bool(false))
            // Paging down: two posts a page, then w0 alone, carrying the two comments that fit and its own nomore false.
            var posts = PaginatedSyncTests.ids(first["updated"])
            var pages: [[String]] = []
            var last: JSONValue = .null
            var nomore = false
            while !nomore {
                let page = try PaginatedSyncTests.json(
                    try await engine.page(session, Collections.wall, parentID: nil, PageParameters(lastId: posts.last, nb: 20)))
                pages.append(PaginatedSyncTests.ids(page["items"]))
                posts += PaginatedSyncTests.ids(page["items"])
                if case .array(let items)? = page["items"], let item = items.last { last = item }
                nomore = page["nomore"] == .bool(true)
            }
            #expect(pages == [["w4", "w3"], ["w2", "w1"], ["w0"]])
            #expect(posts == ["w6", "w5", "w4", "w3", "w2", "w1", "w0"])
            var comments = PaginatedSyncTests.ids(last["comments"])
            #expect(comments == ["c4", "c3"] && last["nomore"] == .bool(false))
            // Its older comments, page by page: every one once.
            nomore = false
            while !nomore {
                let page = try PaginatedSyncTests.json(
                    try await engine.page(session, Collections.comments, parentID: "w0", PageParameters(lastId: comments.last, nb: 20)))
                let ids = PaginatedSyncTests.ids(page["items"])
                #expect(!ids.isEmpty)
                comments += ids
                nomore = page["nomore"] == .bool(true)
            }
            #expect(comments == ["c4", "c3", "c2", "c1", "c0"])

            // A sync whose three changes fit in number but not in bytes: a cropped first page, cut at the budget.
            let date = first["date"]?.stringValue
            for n in 1...3 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.wall, id: "w\(n)"),
                    body: .object([("type", .string("text")), ("text", .string(Self.text + "!"))]),
                    preconditions: .init())
            }
            let cropped = try PaginatedSyncTests.json(
                try await engine.pagedSync(session, Collections.wall, PageParameters(date: date, nb: 20), ifNoneMatch: nil).body)
            #expect(cropped["crop"] == .bool(true) && cropped["nomore"] == .bool(false))
            #expect(PaginatedSyncTests.ids(cropped["updated"]) == ["w6", "w5"])
            // With room for them (the default budget), the same sync is the three changes.
            let whole = try PaginatedSyncTests.json(
                try await SyncEngine(store: store, producers: .testing, collections: Collections.registry).pagedSync(
                    session, Collections.wall, PageParameters(date: date, nb: 20), ifNoneMatch: nil
                ).body)
            #expect(whole["crop"] == .bool(false) && Set(PaginatedSyncTests.ids(whole["updated"])) == ["w1", "w2", "w3"])
        }
    }

    @Test("changes that fit keep every one; only their children are cut, each saying so", arguments: Backend.allCases)
    func changesKeepTheirChildrenCut(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry, pageBytes: 2_500)
            let session = try await ConcurrencyTests.newFamily(store)
            for n in 0..<2 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.threads, id: "t\(n)"), body: .object([("title", .string("T\(n)"))]), preconditions: .init())
            }
            let date = try PaginatedSyncTests.json(
                try await engine.pagedSync(session, Collections.threads, PageParameters(), ifNoneMatch: nil).body)["date"]?.stringValue
            // Two messages of about 1,050 bytes in each thread: the threads are small, their four messages are not.
            for n in 0..<2 {
                for m in 0..<2 {
                    _ = try await engine.put(
                        session, ItemAddress(Collections.messages, parentID: "t\(n)", id: "m\(n)\(m)"),
                        body: .object([("text", .string(Self.text))]), preconditions: .init())
                }
            }
            let answer = try PaginatedSyncTests.json(
                try await engine.pagedSync(session, Collections.threads, PageParameters(date: date), ifNoneMatch: nil).body)
            #expect(answer["sync"] == .bool(true) && answer["crop"] == .bool(false))
            guard case .array(let updated)? = answer["updated"] else { throw SyncError.invalidJSON("no updated") }
            #expect(updated.compactMap { $0["id"]?.stringValue } == ["t1", "t0"])
            // t1 (first) keeps both its messages; t0 keeps none of its, and says that it has more.
            #expect(PaginatedSyncTests.ids(updated.first?["messages"]) == ["m11", "m10"] && updated.first?["nomore"] == .bool(true))
            #expect(PaginatedSyncTests.ids(updated.last?["messages"]) == [] && updated.last?["nomore"] == .bool(false))
        }
    }
}
