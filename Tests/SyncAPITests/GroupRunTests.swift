import SyncAPI
import TestSupport
import Testing

/// The engine's rules for a `POST /group` (protocol §6), as tables: how its calls split into runs, and which calls
/// of a run have their first delta read ahead.
@Suite("Group runs")
struct GroupRunTests {
    static func read(_ path: String?, date: String? = nil) -> GroupCall { GroupCall(isRead: true, path: path, date: date) }
    static func write(_ path: String) -> GroupCall { GroupCall(isRead: false, path: path, date: nil) }

    @Test("consecutive reads share a run; each write runs alone")
    func runs() {
        let calls = [
            Self.read("/api/v1/ctcsync"), Self.read("/api/v1/evtsync"), Self.write("/api/v1/contacts/a"), Self.read("/api/v1/ctcsync"),
            Self.write("/api/v1/contacts/b"), Self.write("/api/v1/contacts/c"), Self.read("/api/v1/familysync"), Self.read("/api/v1/plcsync"),
        ]
        #expect(SyncEngine.groupRuns(calls) == [0..<2, 2..<3, 3..<4, 4..<5, 5..<6, 6..<8])
        #expect(SyncEngine.groupRuns([]) == [])
        #expect(SyncEngine.groupRuns([Self.write("/api/v1/contacts/a")]) == [0..<1])
    }

    @Test("read ahead: a read of a full list's or a bundle's sync endpoint under /api/v1/, nothing else")
    func readAhead() async throws {
        try await Backend.sqlite.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let calls = [
                Self.read("/api/v1/ctcsync", date: "d1"),  // a full list
                Self.read("/api/v1/familysync"),  // a bundle
                Self.read("/api/v1/msgsyncthread", date: "d2"),  // paginated: its handler reads pages, not a delta
                Self.read("/api/v1/contacts/a"),  // an item
                Self.read("/api/v1/spaces/s1/ctcsync"),  // another space: read as always
                Self.read("/health"),  // outside the API
                Self.read(nil),  // no path
                Self.write("/api/v1/evtsync"),  // not a read
            ]
            let ahead = engine.readAhead(calls)
            #expect(ahead.map(\.endpoint) == ["ctcsync", "familysync"])
            #expect(ahead.map(\.date) == ["d1", nil])
        }
    }
}
