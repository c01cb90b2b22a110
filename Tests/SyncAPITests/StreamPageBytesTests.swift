import NIOCore
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Security audit 651e0ee H2 ("Other"): a streamed full list read 256 rows per page whatever their size, so a list of
/// the largest items held tens of megabytes per stream, twice (the rows and the answer's chunks). A page now ends at
/// 1 MiB of bodies too; on both backends, for a streamed list and for one read in a group's pinned snapshot.
@Suite("Stream pages bounded by bytes", .sharingTheMachine)
struct StreamPageBytesTests {
    @Test("12 items of about 214 KB come in pages of at most 1 MiB and a row, every item once", arguments: Backend.allCases)
    func pagesBoundedByBytes(backend: Backend) async throws {
        try await backend.withStore { store in
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = try await ConcurrencyTests.newFamily(store)
            let control = "\u{1}"
            for n in 0..<12 {
                _ = try await engine.put(
                    session, ItemAddress(Collections.contacts, id: "c\(n)"),
                    body: .object([
                        ("firstName", .string("C\(n)")), ("notes", .string(String(repeating: control, count: 10_000))),
                        ("emails", .array(Array(repeating: .string(String(repeating: control, count: 256)), count: 100))),
                    ]), preconditions: .init())
            }
            let pages = PageSizes()
            try await store.streamLiveRows(
                spaceID: session.spaceID, collection: "contacts", start: { _ in },
                page: { bodies in pages.add(bodies.map(\.readableBytes)) })
            try await store.withReadSnapshot { pinned in
                try await pinned.forEachLivePage(spaceID: session.spaceID, collection: "contacts") { bodies in
                    pages.add(bodies.map(\.readableBytes), pinned: true)
                }
            }
            for (name, sizes) in [("streamed", pages.streamed), ("pinned", pages.pinned)] {
                print("\(backend) \(name) pages: \(sizes.map { "\($0.count) rows, \($0.reduce(0, +)) B" })")
                #expect(sizes.flatMap { $0 }.count == 12, "\(name)")
                let largest = try #require(sizes.flatMap { $0 }.max())
                #expect(largest > 200_000)
                #expect(sizes.allSatisfy { $0.reduce(0, +) < (1 << 20) + largest }, "\(name)")
                #expect(sizes.count >= 3, "\(name)")
            }
        }
    }
}

/// The row sizes of each page, as the store hands them over.
final class PageSizes: Sendable {
    private let pages = Mutex<(streamed: [[Int]], pinned: [[Int]])>(([], []))

    func add(_ sizes: [Int], pinned: Bool = false) {
        pages.withLock { if pinned { $0.pinned.append(sizes) } else { $0.streamed.append(sizes) } }
    }

    var streamed: [[Int]] { pages.withLock { $0.streamed } }
    var pinned: [[Int]] { pages.withLock { $0.pinned } }
}
