import SyncAPI
import TestSupport
import Testing

/// Paginated sync on both backends: children inside their parent, and a randomized client that follows the rules
/// of protocol §4 and must always hold an exact, hole-free prefix of the server's sorted list.
@Suite("Paginated sync", .sharingTheMachine)
struct PaginatedSyncTests {
    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }

    static func ids(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { $0["id"]?.stringValue }
    }

    @Test("a thread with 20 messages carries its newest 10; the rest come page by page", arguments: Backend.allCases)
    func twentyMessages(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            _ = try await engine.put(
                session, ItemAddress(Collections.threads, id: "t"), body: .object([("title", .string("T"))]), preconditions: .init())
            for n in 1...20 {
                let id = "m" + (n < 10 ? "0\(n)" : "\(n)")
                _ = try await engine.put(
                    session, ItemAddress(Collections.messages, parentID: "t", id: id), body: .object([("text", .string("message \(n)"))]),
                    preconditions: .init())
            }
            let answer = try Self.json(
                try await engine.pagedSync(session, Collections.threads, PageParameters(maxChildren: 10), ifNoneMatch: nil).body)
            guard case .array(let threads)? = answer["updated"], let thread = threads.first else {
                Issue.record("no thread")
                return
            }
            #expect(Self.ids(thread["messages"]) == (11...20).reversed().map { "m\($0)" })
            #expect(thread["nomore"] == .bool(false))
            let older = try Self.json(
                try await engine.page(session, Collections.messages, parentID: "t", PageParameters(lastId: "m11", nb: 10)))
            #expect(Self.ids(older["items"]) == (1...10).reversed().map { $0 < 10 ? "m0\($0)" : "m\($0)" })
            #expect(older["nomore"] == .bool(true))
            let all = try Self.json(try await engine.page(session, Collections.threads, parentID: nil, PageParameters(maxChildren: 100)))
            guard case .array(let items)? = all["items"] else { return }
            #expect(Self.ids(items.first?["messages"]).count == 20 && items.first?["nomore"] == .bool(true))
        }
    }

    @Test("a sync reads the list's first page and its children only when it answers with them", arguments: Backend.allCases)
    func firstPageOnlyWhenAnswered(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            for n in 0..<30 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.threads, id: "t\(n)"), body: .object([("title", .string("T\(n)"))]),
                    preconditions: .init())
                _ = try await engine.put(
                    session, ItemAddress(Collections.messages, parentID: "t\(n)", id: "m\(n)"),
                    body: .object([("text", .string("hello"))]), preconditions: .init())
            }
            let children = ChildrenQuery(collection: Collections.messages.name, limit: 10)
            func query(_ anchor: String? = nil, limit: Int = 20) -> PageQuery {
                PageQuery(collection: Collections.threads.name, anchorID: anchor, limit: limit, tags: nil, children: children)
            }
            let before = try await store.pageSync(spaceID: session.spaceID, query: query(), since: nil).version
            let date = try Self.json(
                try await engine.pagedSync(session, Collections.threads, PageParameters(), ifNoneMatch: nil).body)["date"]?.stringValue
            // Two threads change after the date (a new message each moves them to the top); t2 and t3 do not.
            for n in [0, 1] {
                _ = try await engine.put(
                    session, ItemAddress(Collections.messages, parentID: "t\(n)", id: "new\(n)"),
                    body: .object([("text", .string("again"))]), preconditions: .init())
            }
            // Answered by its changes: no first page read, and children only of the changed threads.
            for anchor in [nil, "t3"] {
                let rows = try await store.pageSync(spaceID: session.spaceID, query: query(anchor), since: before)
                #expect(Set(rows.changed.map(\.id)) == ["t0", "t1"] && rows.top.isEmpty, "anchor \(anchor ?? "none")")
                #expect(Set(rows.children.keys) == ["t0", "t1"], "anchor \(anchor ?? "none")")
            }
            // Answered with a first page: no date, a date past the counter, an unknown anchor, more changes than fit.
            let firstPages: [(PageQuery, Int64?, Int)] = [
                (query(), nil, 21), (query(), before + 100, 21), (query("unknown"), before, 21), (query(limit: 1), before, 2),
            ]
            for (question, since, count) in firstPages {
                let rows = try await store.pageSync(spaceID: session.spaceID, query: question, since: since)
                // Children of the page's items only, not of the one more read to tell whether more exist.
                #expect(rows.top.count == count && rows.children.count == count - 1, "\(question) since \(since.map(String.init) ?? "nil")")
            }
            // And the answers: the two changes alone; a fresh first page, cropped, when they do not fit.
            let few = try Self.json(
                try await engine.pagedSync(
                    session, Collections.threads, PageParameters(date: date), ifNoneMatch: nil
                ).body)
            #expect(Self.ids(few["updated"]) == ["t1", "t0"] && few["crop"] == .bool(false) && few["nomore"] == .bool(false))
            let cropped = try Self.json(
                try await engine.pagedSync(
                    session, Collections.threads, PageParameters(date: date, nb: 1), ifNoneMatch: nil
                ).body)
            #expect(Self.ids(cropped["updated"]) == ["t1"] && cropped["crop"] == .bool(true) && cropped["nomore"] == .bool(false))
        }
    }

    /// A client's copy of the top of the thread list, kept exactly as protocol §4 tells a client to.
    struct Client {
        var items: [JSONValue] = []
        var date: String?
        var nomore = false
        /// How often the server answered `crop` and how often the client paged down (the test must exercise both).
        var crops = 0
        var pages = 0

        static func sortKey(_ item: JSONValue) -> (String, String) {
            (item["lastMessageAt"]?.stringValue ?? "", item["id"]?.stringValue ?? "")
        }

        mutating func sort() {
            items.sort { Self.sortKey($0) > Self.sortKey($1) }
        }

        mutating func sync(_ engine: SyncEngine, _ session: Session, nb: Int) async throws {
            if items.isEmpty { date = nil }
            let parameters = PageParameters(date: date, lastId: items.last?["id"]?.stringValue, nb: nb, maxChildren: 0)
            let answer = try JSONParser.parse(try await engine.pagedSync(session, Collections.threads, parameters, ifNoneMatch: nil).body)
            guard case .array(let updated)? = answer["updated"], case .array(let deleted)? = answer["deleted"] else {
                throw SyncError.invalidJSON("bad answer")
            }
            if answer["crop"] == .bool(true) { crops += 1 }
            if answer["sync"] == .bool(false) || answer["crop"] == .bool(true) {
                items = updated
            } else {
                let gone = Set(deleted.compactMap(\.stringValue) + updated.compactMap { $0["id"]?.stringValue })
                items.removeAll { gone.contains($0["id"]?.stringValue ?? "") }
                items += updated
                sort()
            }
            date = answer["date"]?.stringValue
            nomore = answer["nomore"] == .bool(true)
        }

        mutating func getMore(_ engine: SyncEngine, _ session: Session, nb: Int) async throws {
            let parameters = PageParameters(lastId: items.last?["id"]?.stringValue, nb: nb, maxChildren: 0)
            let page = try JSONParser.parse(try await engine.page(session, Collections.threads, parentID: nil, parameters))
            guard case .array(let more)? = page["items"] else { throw SyncError.invalidJSON("bad page") }
            items += more
            pages += 1
            nomore = page["nomore"] == .bool(true)
        }
    }

    /// The server's whole sorted list, without children (read with the default byte budget, which it fits).
    static func serverList(_ engine: SyncEngine, _ session: Session) async throws -> [JSONValue] {
        let whole = SyncEngine(store: engine.store, producers: .testing, collections: Collections.registry)
        let page = try JSONParser.parse(try await whole.page(session, Collections.threads, parentID: nil, PageParameters(nb: 500, maxChildren: 0)))
        guard case .array(let items)? = page["items"] else { return [] }
        return items
    }

    static func withoutChildren(_ item: JSONValue) -> JSONValue {
        guard case .object(let members) = item else { return item }
        return .object(members.filter { $0.key != "messages" && $0.key != "nomore" })
    }

    /// With the default byte budget, and with one of 300 bytes, which cuts most answers after one or two threads (a
    /// list cut at its budget says `nomore` false, and a sync whose changes do not fit it is a cropped first page).
    @Test(
        "a client that obeys crop and pages down always holds an exact prefix of the server's list",
        arguments: Backend.allCases, [PageQuery.defaultByteBudget, 300])
    func randomizedClient(backend: Backend, pageBytes: Int) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry, pageBytes: pageBytes)
            let session = try await ConcurrencyTests.newFamily(store)
            var random = SplitMix(seed: backend == .sqlite ? 7 : 11)
            var client = Client()
            var created = 0
            var syncTrue = 0
            for step in 0..<160 {
                // One to four random writes.
                for _ in 0..<(1 + random.next(4)) {
                    let existing = created == 0 ? nil : "t\(random.next(created))"
                    switch random.next(10) {
                    case 0...2,
                        _ where existing == nil:
                        created += 1
                        _ = try await engine.put(
                            session, ItemAddress(Collections.threads, id: "t\(created - 1)"), body: .object([("title", .string("T\(created)"))]),
                            preconditions: .init())
                    case 3...5:
                        do {
                            _ = try await engine.put(
                                session, ItemAddress(Collections.messages, parentID: existing!, id: "m\(step)"),
                                body: .object([("text", .string("hello"))]), preconditions: .init())
                        } catch let error as SyncError where error.code == .notFound {
                            // The thread was deleted: a message cannot be posted there.
                        }
                    case 6...7:
                        _ = try await engine.put(
                            session, ItemAddress(Collections.threads, id: existing!),
                            body: .object([("title", .string("T")), ("read", .bool(random.next(2) == 0))]), preconditions: .init())
                    default:
                        try await engine.delete(session, ItemAddress(Collections.threads, id: existing!), preconditions: .init())
                    }
                }
                let nb = 1 + random.next(6)
                let before = client.date
                try await client.sync(engine, session, nb: nb)
                if before != nil { syncTrue += 1 }
                // Sometimes "get more", down to the end of the list.
                while !client.nomore && random.next(3) == 0 { try await client.getMore(engine, session, nb: 1 + random.next(4)) }
                let server = try await Self.serverList(engine, session).map(Self.withoutChildren)
                let held = client.items.map(Self.withoutChildren)
                #expect(held.count <= server.count, "step \(step)")
                #expect(held == Array(server.prefix(held.count)), "step \(step): the client's list is not a prefix of the server's")
                if client.nomore { #expect(held.count == server.count, "step \(step): nomore but items missing") }
            }
            #expect(syncTrue > 50 && client.crops > 5 && client.pages > 5, "\(syncTrue) syncs, \(client.crops) crops, \(client.pages) pages")
        }
    }
}

/// A small seeded generator, so that a failing randomized run can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next(_ upperBound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(upperBound))
    }
}
