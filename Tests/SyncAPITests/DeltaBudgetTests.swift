import Foundation
import SyncAPI
import TestSupport
import Testing

/// A delta is built whole, so what it holds is bounded (security audit H2): a date whose changes are more than
/// `Delta.byteBudget` (a date from long ago, or forged as `<db>.<family>.1`) answers the whole list, streamed from a
/// cursor, with `sync: false`; a date within the budget answers its changes as always.
@Suite("Deltas within a byte budget", .sharingTheMachine)
struct DeltaBudgetTests {
    @Test("a delta past the byte budget answers the whole list, streamed; one within it answers its changes", arguments: Backend.allCases)
    func overBudget(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let session = try await ConcurrencyTests.newFamily(store)
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let contact = { (n: Int, notes: String) -> JSONValue in .object([("firstName", .string("C\(n)")), ("notes", .string(notes))]) }
            _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c0"), body: contact(0, "first"), preconditions: .init())
            let early = try JSONParser.parse(try await engine.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil).wholeBody())
            let earlyDate = try #require(early["date"]?.stringValue)
            // More changed bytes than a delta holds: about budget / 9,000 contacts of 9,000 bytes, and some more.
            let notes = String(repeating: "n", count: 9_000)
            let count = Delta.byteBudget / 9_000 + 20
            for n in 1...count {
                _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c\(n)"), body: contact(n, notes), preconditions: .init())
            }
            let delta = try await store.delta(spaceID: session.spaceID, collections: ["contacts"], since: 1)
            #expect(delta.overflowed && delta.rows.isEmpty)
            // A dateless read (a bundle's first sync) keeps the same budget: its caller streams past it.
            let whole = try await store.delta(spaceID: session.spaceID, collections: ["contacts"], since: nil)
            #expect(whole.overflowed && whole.rows.isEmpty)

            let late = try JSONParser.parse(
                try await engine.fullListSync(session, Collections.contacts, date: earlyDate, ifNoneMatch: nil).wholeBody())
            #expect(late["sync"] == .bool(false), "past the budget: the whole list")
            guard case .array(let items)? = late["updated"] else { throw SyncError.invalidJSON("no updated") }
            #expect(items.count == count + 1 && late["deleted"] == .array([]))
            // A date within the budget still answers its changes only.
            let lateDate = try #require(late["date"]?.stringValue)
            _ = try await engine.put(session, ItemAddress(Collections.contacts, id: "c0"), body: contact(0, "changed"), preconditions: .init())
            let recent = try JSONParser.parse(
                try await engine.fullListSync(session, Collections.contacts, date: lateDate, ifNoneMatch: nil).wholeBody())
            guard case .array(let changed)? = recent["updated"] else { throw SyncError.invalidJSON("no updated") }
            #expect(recent["sync"] == .bool(true) && changed.map { $0["id"] } == [.string("c0")])
        }
    }
}
