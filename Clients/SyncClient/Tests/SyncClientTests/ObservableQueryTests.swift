import Foundation
import Observation
import SyncClientTesting
import Testing

@testable import SyncClient

/// `ObservableQuery`: a query for SwiftUI, its first value at once, redrawn only when its rows change.
@Suite("Observable queries")
@MainActor
struct ObservableQueryTests {
    /// Starts tracking what `read` reads now; the stream yields once at its next write.
    static func nextChange(_ read: () -> Void) -> AsyncStream<Void> {
        let (change, continuation) = AsyncStream.makeStream(of: Void.self)
        withObservationTracking(read) {
            continuation.yield()
            continuation.finish()
        }
        return change
    }

    @Test("the first value is there when it is made; other rows' writes redraw nothing; a new query reads at once")
    func firstValueAndChanges() async throws {
        let (client, server) = try await QueryTests.synced([
            "c1": ["firstName": "Ann", "lastName": "Smith"], "c2": ["firstName": "Bob", "lastName": "Jones"],
        ])
        let smiths = ObservableQuery(client, SyncQuery(Contact.self).filter("lastName", .equals, "Smith"))
        #expect(smiths.items.map(\.id) == ["c1"] && smiths.skipped.isEmpty && smiths.error == nil)
        // A write outside the query, then one inside: the first change seen is the second write's.
        let change = Self.nextChange { _ = smiths.items }
        try await client.save(Contact(id: "c3", firstName: "Cid", lastName: "Jones"))
        try await client.save(Contact(id: "c4", firstName: "Dee", lastName: "Smith"))
        for await _ in change {}
        #expect(smiths.items.map(\.id) == ["c1", "c4"])
        // A sync bringing another device's item of the query, and one that does not decode as a contact: skipped.
        server.edit(.contacts, id: "c5", json: ["firstName": 5, "lastName": "Smith"])
        let synced = Self.nextChange { _ = smiths.skipped }
        try await client.sync()
        for await _ in synced {}
        #expect(smiths.items.map(\.id) == ["c1", "c4"] && smiths.skipped.map(\.id) == ["c5"])
        // Another query: read before the setter returns.
        smiths.query = SyncQuery(Contact.self).filter("lastName", .equals, "Jones")
        #expect(smiths.items.map(\.id) == ["c2", "c3"] && smiths.skipped.isEmpty)
        // A field path the SDK refuses: an error, no items thrown away silently.
        smiths.query = SyncQuery(Contact.self).filter("last name'", .equals, "x")
        #expect(smiths.error != nil)
    }
}
