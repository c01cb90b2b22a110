import SyncAPI
import TestSupport
import Testing

/// Deltas answered from what the change hub heard (issue 57 item 2): the map's rule as tables of events and answers, and
/// the engine answering the same bytes as a read while a write through it is always read back.
@Suite("Deltas answered from what the hub heard")
struct HeardCountersTests {
    /// One step of a table: what happens to the map, then which positions of space `s` it answers.
    enum Event {
        case notice(Int64, String)
        case read(Int64, String, ticket: Ticket)
        case moved
        case live(Bool)
        case forgetAll
        case other(String)
    }

    /// Which ticket a read began with: the one taken at the start of the table, or one taken just now.
    enum Ticket { case first, now }

    static func run(_ events: [Event], capacity: Int = 100) -> HeardCounters {
        let heard = HeardCounters(live: true, capacity: capacity)
        let first = heard.ticket()
        for event in events {
            switch event {
            case .notice(let version, let history): heard.heard(space: "s", version: version, history: history)
            case .read(let version, let history, let ticket):
                guard let taken = ticket == .first ? first : heard.ticket() else { continue }
                heard.read(space: "s", version: version, history: history, ticket: taken)
            case .moved: heard.moved(space: "s")
            case .live(let live): heard.setLive(live)
            case .forgetAll: heard.forgetAll()
            case .other(let space): heard.heard(space: space, version: 1, history: "")
            }
        }
        return heard
    }

    @Test(
        "the map answers a date only at exactly the counter it heard, on the same history, while notices flow",
        arguments: [
            // (events, the one position answered, nil: none)
            ([Event.notice(5, "")], DatePosition(version: 5, history: "") as DatePosition?),
            ([.notice(5, ""), .notice(7, "")], DatePosition(version: 7, history: "")),
            // A late notice never takes the entry back.
            ([.notice(7, ""), .notice(6, "")], DatePosition(version: 7, history: "")),
            // Another history replaces it, even lower (a failover's new line).
            ([.notice(7, ""), .notice(3, "a1b2c3d4e5f60718")], DatePosition(version: 3, history: "a1b2c3d4e5f60718")),
            // A read of the primary that began while notices flowed, and nothing since.
            ([.read(4, "", ticket: .first)], DatePosition(version: 4, history: "")),
            ([.read(4, "", ticket: .first), .notice(6, "")], DatePosition(version: 6, history: "")),
            ([.notice(6, ""), .read(4, "", ticket: .first)], DatePosition(version: 6, history: "")),
            // A read that began before notices stopped, or before a write of this instance, records nothing.
            ([.live(false), .live(true), .read(4, "", ticket: .first)], nil),
            ([.moved, .read(4, "", ticket: .first)], nil),
            ([.moved, .read(4, "", ticket: .now)], DatePosition(version: 4, history: "")),
            // Not answered while notices may be missed; back on, it starts empty.
            ([.notice(5, ""), .live(false)], nil),
            ([.notice(5, ""), .live(false), .live(true)], nil),
            ([.notice(5, ""), .live(false), .notice(6, ""), .live(true)], nil),
            // A write of this instance drops the entry; a commit whose notice could not be sent drops all.
            ([.notice(5, ""), .moved], nil),
            ([.notice(5, ""), .forgetAll], nil),
            // Full: starts over.
            ([.notice(5, ""), .other("t"), .other("u")], nil),
        ])
    func table(events: [Event], answered: DatePosition?) {
        let heard = Self.run(events, capacity: 2)
        for version in Int64(0)...8 {
            for history in ["", "a1b2c3d4e5f60718"] {
                let position = DatePosition(version: version, history: history)
                #expect(heard.isAt(space: "s", position) == (position == answered), "\(events): \(position)")
            }
        }
        #expect(!heard.isAt(space: "elsewhere", DatePosition(version: 5, history: "")))
    }

    @Test(
        "a delta at the heard counter is answered with the bytes of a read, and a write through the engine is read back", arguments: Backend.allCases)
    func engine(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let session = try await ConcurrencyTests.newFamily(store)
            // Notices flow as far as this map knows; none comes here (the test is the only writer): what moves it is
            // the engine's reads, and what drops it the engine's writes.
            let heard = HeardCounters(live: true)
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry, heard: heard)
            _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c1"), body: ["firstName": "A"], preconditions: .init())
            let full = try JSONParser.parse(try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil).wholeBody())
            let date = try #require(full["date"]?.stringValue)
            let read = try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody()
            #expect(heard.hits == 0, "the first delta at the date reads, and records the counter")
            let answered = try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody()
            #expect(heard.hits == 1, "the second is answered from the map")
            #expect(answered == read, "\(String(decoding: answered, as: UTF8.self))")
            let notModified = try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: "\"\(date)\"")
            if case .notModified = notModified.content {} else { Issue.record("If-None-Match at the date: not 304") }
            // A write through the engine: the next delta at the old date reads it, though no notice came.
            _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c2"), body: ["firstName": "B"], preconditions: .init())
            let readBytes = try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody()
            let after = try JSONParser.parse(readBytes)
            guard case .array(let updated)? = after["updated"] else { throw SyncError.invalidJSON("\(after)") }
            #expect(updated.map { $0["id"] } == [.string("c2")])
            #expect(after["date"]?.stringValue != date)
            // The same range again: the read recorded its counter and kept its answer, which answers it (the bytes of
            // the read), with no read.
            let kept = engine.fullLists.hits
            let again = try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody()
            #expect(engine.fullLists.hits == kept + 1)
            #expect(again == readBytes)
            // Another instance writes (no drop here): once its notice is heard, the kept range is not the answer.
            let other = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            _ = try await other.put(session, ItemAddress(Collections.contacts, id: "c3"), body: ["firstName": "C"], preconditions: .init())
            let counter = try await store.delta(spaceID: session.spaceID, collections: [], since: nil).version
            heard.heard(space: session.spaceID, version: counter, history: "")
            let third = try JSONParser.parse(try await engine.fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody())
            guard case .array(let changed)? = third["updated"] else { throw SyncError.invalidJSON("\(third)") }
            #expect(Set(changed.compactMap { $0["id"]?.stringValue }) == ["c2", "c3"])
            // Inside a group's snapshot the map is not asked.
            let hits = heard.hits
            _ = try await store.withReadSnapshot { snapshot in
                try await engine.reading(.snapshot(snapshot)).fullListSync(session, Collections.contacts, date: date, ifNoneMatch: nil).wholeBody()
            }
            #expect(heard.hits == hits)
        }
    }
}
