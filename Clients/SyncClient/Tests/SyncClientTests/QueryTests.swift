import Foundation
import GRDB
import SyncClientTesting
import Testing

@testable import SyncClient

/// Queries (issue 40, item 1): filtered, sorted, limited reads of the replica, on an index of their own, that skip
/// what does not decode and wake only when their rows change.
@Suite("Queries on the replica")
struct QueryTests {
    static func synced(_ contacts: [String: JSONObject]) async throws -> (SyncClient, FakeSyncServer) {
        let server = FakeSyncServer()
        let client = try TestKitTests.client(server)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for (id, json) in contacts { server.edit(.contacts, id: id, json: json) }
        try await client.sync()
        return (client, server)
    }

    @Test("filter, sort, limit and count; unsent local edits count; a missing field matches only null and notEquals")
    func filterSortLimit() async throws {
        let (client, _) = try await Self.synced([
            "c1": ["firstName": "Ann", "lastName": "Smith"], "c2": ["firstName": "bob", "lastName": "Smith"],
            "c3": ["firstName": "Cid", "lastName": "Jones"], "c4": ["firstName": "Dee"],
            "c5": ["firstName": "Eve", "lastName": "Smithers"],
        ])
        let smiths = SyncQuery(Contact.self).filter("lastName", .equals, "Smith").sorted(by: "firstName", ascending: false)
        #expect(try client.fetch(smiths).items.map(\.id) == ["c2", "c1"])
        #expect(try client.count(smiths) == 2)
        #expect(try client.fetch(smiths.limit(1, offset: 1)).items.map(\.id) == ["c1"])
        #expect(try client.fetch(SyncQuery(Contact.self).filter("lastName", .contains, "SMITH")).items.map(\.id) == ["c1", "c2", "c5"])
        #expect(try client.fetch(SyncQuery(Contact.self).filter("lastName", .equals, .null)).items.map(\.id) == ["c4"])
        #expect(try client.fetch(SyncQuery(Contact.self).filter("lastName", .notEquals, "Smith")).items.map(\.id) == ["c3", "c4", "c5"])
        #expect(
            try client.fetch(SyncQuery(Contact.self).filter("firstName", .greaterOrEqual, "Cid").sorted(by: "firstName")).items.map(\.id) == [
                "c3", "c4", "c5", "c2",
            ])
        // A local edit not yet pushed, and a local delete, are what the query sees.
        try await client.save(.contacts, id: "c3", json: ["firstName": "Cid", "lastName": "Smith"])
        try await client.delete(.contacts, id: "c1")
        #expect(try client.fetch(smiths).items.map(\.id) == ["c2", "c3"])
    }

    @Test("an item that does not decode is skipped and named, never failing the list")
    func skipsUndecodable() async throws {
        let (client, _) = try await Self.synced(["c1": ["firstName": "Ann"], "c2": ["firstName": 42], "c3": ["firstName": "Cid"]])
        let result = try client.fetch(SyncQuery(Contact.self).sorted(by: "id"))
        #expect(result.items.map(\.id) == ["c1", "c3"])
        #expect(result.skipped.map(\.id) == ["c2"])
    }

    @Test("the filtered and sorted fields get an index of the replica that SQLite uses")
    func indexed() async throws {
        let (client, _) = try await Self.synced(["c1": ["lastName": "Smith"]])
        func plan(_ query: SyncQuery<Contact>) async throws -> [String] {
            _ = try client.fetch(query)
            let plan = try QueryPlan(query)
            return try await client.replica.pool.read { db in
                try Row.fetchAll(
                    db, sql: "EXPLAIN QUERY PLAN SELECT id FROM items WHERE \(plan.whereSQL) ORDER BY \(plan.orderSQL)", arguments: plan.arguments
                ).map { $0["detail"] as String }
            }
        }
        let filtered = try await plan(SyncQuery(Contact.self).filter("lastName", .equals, "Smith"))
        #expect(filtered.contains { $0.contains("USING INDEX query_contacts_lastName") }, "\(filtered)")
        let sorted = try await plan(SyncQuery(Contact.self).sorted(by: "firstName"))
        #expect(sorted.contains { $0.contains("USING INDEX query_contacts_firstName") }, "\(sorted)")
        #expect(!sorted.contains { $0.contains("TEMP B-TREE") }, "sorted by the index: \(sorted)")
    }

    /// A model written by hand: it declares no query fields.
    struct HandWritten: SyncModel {
        static let collectionName = "contacts"
        var id: String
        var firstName: String?
    }

    @Test("fields named by key path are the generated model's own; a date field compares with a Date; an undeclared one fails")
    func keyPaths() async throws {
        let (client, server) = try await Self.synced([
            "c1": ["firstName": "Ann", "lastName": "Smith"], "c2": ["firstName": "bob", "lastName": "Smith"],
            "c3": ["firstName": "Cid", "lastName": "Jones"],
        ])
        let typed = SyncQuery(Contact.self).filter(\.lastName, .equals, "Smith").sorted(by: \.firstName, ascending: false)
        let named = SyncQuery(Contact.self).filter("lastName", .equals, "Smith").sorted(by: "firstName", ascending: false)
        #expect(try client.fetch(typed).items.map(\.id) == ["c2", "c1"])
        #expect(try client.fetch(typed).items.map(\.id) == client.fetch(named).items.map(\.id))
        #expect(try client.count(SyncQuery(Contact.self).filter(\.id, .notEquals, "c3")) == 2)
        server.edit(.events, id: "e1", json: ["title": "Early", "start": "2026-01-01T09:00:00.000Z", "allDay": false])
        server.edit(.events, id: "e2", json: ["title": "Late", "start": "2026-06-01T09:00:00.000Z", "allDay": false])
        try await client.sync()
        let march = try #require(ISO8601DateFormatter().date(from: "2026-03-01T00:00:00Z"))
        #expect(try client.fetch(SyncQuery(Event.self).filter(\.start, .greaterOrEqual, march)).items.map(\.id) == ["e2"])
        #expect(try client.fetch(SyncQuery(Event.self).filter(\.start, .less, march).sorted(by: \.title)).items.map(\.id) == ["e1"])
        // A model written by hand lists no fields: a key path of it fails the query, saying so (strings still work).
        #expect(HandWritten.queryFields.isEmpty)
        do {
            _ = try client.fetch(SyncQuery(HandWritten.self).filter(\.firstName, .equals, "Ann"))
            Issue.record("an undeclared field was accepted")
        } catch let error as SyncClientError {
            #expect("\(error)".contains("queryFields"), "\(error)")
        }
        #expect(try client.fetch(SyncQuery(HandWritten.self).filter("firstName", .equals, "Ann")).items.map(\.id) == ["c1"])
    }

    @Test("field names that are not names are refused before any SQL")
    func refusesBadFields() async throws {
        let (client, _) = try await Self.synced([:])
        for field in ["", "a b", "x') OR 1=1 --", "1st", "a..b", String(repeating: "x", count: 65)] {
            #expect(throws: SyncClientError.self) { try client.fetch(SyncQuery(Contact.self).filter(field, .equals, "x")) }
        }
        #expect(throws: SyncClientError.self) { try client.fetch(SyncQuery(Contact.self).filter("lastName", .contains, 5)) }
    }

    @Test("an observed query yields its rows now, then only when they change")
    func observed() async throws {
        let (client, server) = try await Self.synced(["c1": ["firstName": "Ann", "lastName": "Smith"]])
        var updates = client.observe(SyncQuery(Contact.self).filter("lastName", .equals, "Smith")).makeAsyncIterator()
        #expect(try await updates.next()?.items.map(\.id) == ["c1"])
        // A change to another item of the collection that the query does not match: nothing; then one it matches.
        server.edit(.contacts, id: "c2", json: ["firstName": "Bob", "lastName": "Jones"])
        try await client.sync()
        try await client.save(.contacts, id: "c3", json: ["firstName": "Cid", "lastName": "Smith"])
        #expect(try await updates.next()?.items.map(\.id) == ["c1", "c3"])
    }
}
