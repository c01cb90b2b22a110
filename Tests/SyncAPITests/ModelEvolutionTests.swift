import Foundation
import SyncAPI
import TestSupport
import Testing

/// Evolution of the served model (protocol §12): additive changes apply live, breaking ones are refused with their
/// list unless accepted, and then an earlier date of sync answers `sync: false` for the collections they touched.
@Suite("Model evolution", .sharingTheMachine)
struct ModelEvolutionTests {
    /// The default model with `edit` applied to its file text.
    static func family(_ edit: (String) -> String) throws -> DataModel {
        try DataModel(json: Array(edit(DataModel.familyFile).utf8))
    }

    static func optionalField(_ text: String) -> String {
        text.replacingOccurrences(
            of: #""notes":           {"type": "string", "maxLength": 10000}"#,
            with: #""notes":           {"type": "string", "maxLength": 10000}, "nickname": {"type": "string"}"#)
    }

    static func servedDigest(_ store: any SyncStore) async throws -> String? {
        guard let text = try await store.servedModel() else { return nil }
        return try DataModel(json: Array(text.utf8)).digest
    }

    @Test("changes are classified: optional field, enum value and wider limit additive; the rest breaking")
    func classified() throws {
        let base = Collections.model
        let added = try Self.family(Self.optionalField).changes(from: base)
        #expect(added.map(\.description) == [#"collection "contacts", field "nickname": added"#] && !added[0].breaking)
        let required = try Self.family {
            $0.replacingOccurrences(
                of: #""address":   {"type": "string", "maxLength": 256}"#,
                with: #""address":   {"type": "string", "maxLength": 256, "required": true}"#)
        }
        #expect(required.changes(from: base).map(\.breaking) == [true])
        let enumValue = try Self.family {
            $0.replacingOccurrences(of: #"["parent", "child", "other"]"#, with: #"["parent", "child", "other", "guest"]"#)
        }
        #expect(enumValue.changes(from: base).map(\.breaking) == [false])
        let narrower = try Self.family {
            $0.replacingOccurrences(
                of: #""locale":        {"type": "string", "maxLength": 64}"#, with: #""locale":        {"type": "string", "maxLength": 32}"#)
        }
        #expect(narrower.changes(from: base).map(\.description) == [#"collection "settings", field "locale": maxLength 64 → 32"#])
        #expect(narrower.changes(from: base).allSatisfy { $0.breaking })
        let recipes = try DataModel(json: Array(#"{"model":"r","collections":{"recipes":{"kind":"list","sync":"rcpsync"}}}"#.utf8))
        let swap = recipes.changes(from: base)
        #expect(swap.filter(\.breaking).count == 10 && swap.filter { !$0.breaking }.map(\.collection) == ["recipes"])
    }

    /// The default model without `contacts.notes` (breaking: a removed field).
    static func withoutNotes(_ text: String) -> String {
        text.replacingOccurrences(of: ",\n        \"notes\":           {\"type\": \"string\", \"maxLength\": 10000}", with: "")
    }

    @Test(
        "an accepted breaking change answers sync: false only for the collections it touched; stored bodies take the new shape",
        arguments: Backend.allCases)
    func touchedCollectionsOnly(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let session = try await ConcurrencyTests.newFamily(store)
            let before = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let note: JSONValue = ["firstName": "Ann", "notes": "call back"]
            _ = try await before.put(session, ItemAddress(Collections.contacts, id: "c1"), body: note, preconditions: .init())
            let event: JSONValue = ["title": "Party", "start": "2026-12-24T18:00:00Z"]
            _ = try await before.put(session, ItemAddress(Collections.events, id: "e1"), body: event, preconditions: .init())
            var contacts = ConcurrencyTests.Replica()
            var events = ConcurrencyTests.Replica()
            try await contacts.apply(try await before.fullListSync(session, Collections.contacts, date: nil, ifNoneMatch: nil))
            try await events.apply(try await before.fullListSync(session, Collections.events, date: nil, ifNoneMatch: nil))
            let oldDate = try #require(contacts.date)

            // Removing `contacts.notes` is breaking: accepted, it starts generation 1 and touches `contacts` only.
            let without = try Self.family(Self.withoutNotes)
            let changes = try await ModelRecord.apply(without, to: store, acceptBreaking: true)
            #expect(changes.map(\.description) == [#"collection "contacts", field "notes": removed (its stored values are dropped)"#])
            let generations = try ModelGenerations(json: try #require(try await store.modelGenerations()))
            #expect(generations == ModelGenerations(current: 1, touched: ["contacts": 1]))
            let after = SyncEngine(store: store, producers: .testing, collections: CollectionRegistry(without))
            let newContacts = try #require(after.collections.named("contacts"))
            let newEvents = try #require(after.collections.named("events"))
            let contactAnswer = try JSONParser.parse(try await after.fullListSync(session, newContacts, date: oldDate, ifNoneMatch: nil).wholeBody())
            #expect(contactAnswer["sync"] == .bool(false), "contacts were touched: a full answer")
            // The stored value is gone from the body, which keeps its order (id first, modified last).
            guard case .object(let c1)? = (contactAnswer["updated"].flatMap { if case .array(let a) = $0 { a.first } else { nil } }) else {
                throw SyncError.invalidJSON("no c1: \(contactAnswer)")
            }
            #expect(c1.map(\.key) == ["id", "firstName", "lastName", "emails", "phones", "birthdayEventId", "modified"])
            let eventAnswer = try JSONParser.parse(try await after.fullListSync(session, newEvents, date: events.date, ifNoneMatch: nil).wholeBody())
            #expect(eventAnswer["sync"] == .bool(true), "events were not touched: the old date still answers")
            #expect(eventAnswer["updated"] == .array([]) && eventAnswer["deleted"] == .array([]))
            let newDate = try #require(eventAnswer["date"]?.stringValue)
            #expect(newDate.hasSuffix(".1") && newDate != oldDate)

            // Adding an optional field is additive: no new generation; the new date answers, bodies get the field.
            let nickname = try Self.family {
                Self.withoutNotes($0).replacingOccurrences(
                    of: #""birthdayEventId": {"type": "string", "format": "reference"}"#,
                    with: #""birthdayEventId": {"type": "string", "format": "reference"}, "nickname": {"type": "string"}"#)
            }
            #expect(try await ModelRecord.apply(nickname, to: store, acceptBreaking: false).map(\.breaking) == [false])
            let third = SyncEngine(store: store, producers: .testing, collections: CollectionRegistry(nickname))
            let again = try JSONParser.parse(
                try await third.fullListSync(session, try #require(third.collections.named("contacts")), date: newDate, ifNoneMatch: nil).wholeBody())
            #expect(again["sync"] == .bool(true) && again["updated"] == .array([]))
            let full = try JSONParser.parse(
                try await third.fullListSync(session, try #require(third.collections.named("contacts")), date: nil, ifNoneMatch: nil).wholeBody())
            guard case .array(let items)? = full["updated"], case .object(let shaped)? = items.first else { throw SyncError.invalidJSON("\(full)") }
            #expect(shaped.map(\.key) == ["id", "firstName", "lastName", "emails", "phones", "birthdayEventId", "nickname", "modified"])
            #expect(shaped.first { $0.key == "nickname" }?.value == .null)
        }
    }

    @Test(
        "the database records its model: additive changes live, breaking ones refused unless accepted (new generation)", arguments: Backend.allCases)
    func recorded(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = Collections.model
            let id = try await store.databaseID()
            #expect(try await ModelRecord.apply(family, to: store, acceptBreaking: false).isEmpty)
            #expect(try await ModelRecord.apply(family, to: store, acceptBreaking: false).isEmpty)
            // Additive: applied, every date stays answerable.
            let wider = try Self.family(Self.optionalField)
            #expect(try await ModelRecord.apply(wider, to: store, acceptBreaking: false).count == 1)
            #expect(try await store.databaseID() == id)
            #expect(try await Self.servedDigest(store) == wider.digest)
            // Breaking: refused, nothing changed; accepted, a new model generation marks the touched collection.
            let narrower = try Self.family { $0.replacingOccurrences(of: #""maxLength": 64"#, with: #""maxLength": 32"#) }
            await #expect(throws: ModelError.self) { try await ModelRecord.apply(narrower, to: store, acceptBreaking: false) }
            #expect(try await Self.servedDigest(store) == wider.digest)
            #expect(try await store.databaseID() == id)
            let applied = try await ModelRecord.apply(narrower, to: store, acceptBreaking: true)
            #expect(applied.contains { $0.breaking })
            #expect(try await store.databaseID() == id)
            let generations = try ModelGenerations(json: try #require(try await store.modelGenerations()))
            // `narrower` also drops the field `wider` added to contacts: both collections are touched.
            #expect(generations == ModelGenerations(current: 1, touched: ["settings": 1, "contacts": 1]))
        }
    }
    /// The default model without its `places` collection.
    static func withoutPlaces() throws -> DataModel {
        guard case .object(var top) = try JSONParser.parse(DataModel.familyFile),
            let index = top.firstIndex(where: { $0.key == "collections" }), case .object(let collections) = top[index].value
        else { throw SyncError.invalidJSON("the default model file") }
        top[index].value = .object(collections.filter { $0.key != "places" })
        return try DataModel(json: Array(JSONWriter.encode(.object(top)).utf8))
    }

    @Test(
        "a collection removed, then added back, starts a new generation: a date issued meanwhile answers it in full",
        arguments: Backend.allCases)
    func collectionAddedBack(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let session = try await ConcurrencyTests.newFamily(store)
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let home: JSONValue = ["name": "Home"]
            _ = try await engine.put(session, ItemAddress(Collections.places, id: "p1"), body: home, preconditions: .init())
            // Removed (breaking, accepted): generation 1 marks places; a date is taken under that model.
            let without = try Self.withoutPlaces()
            #expect(try await ModelRecord.apply(without, to: store, acceptBreaking: true).map(\.breaking) == [true])
            let meanwhile = SyncEngine(store: store, producers: .testing, collections: CollectionRegistry(without))
            let contacts = try #require(meanwhile.collections.named("contacts"))
            let taken = try JSONParser.parse(try await meanwhile.fullListSync(session, contacts, date: nil, ifNoneMatch: nil).wholeBody())
            let date = try #require(taken["date"]?.stringValue)
            // Added back: additive, so no flag, but its rows were never in that date: a new generation marks it.
            #expect(try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false).map(\.breaking) == [false])
            let generations = try ModelGenerations(json: try #require(try await store.modelGenerations()))
            #expect(generations.current == 2 && generations.touched["places"] == 2)
            let back = SyncEngine(store: store, producers: .testing, collections: CollectionRegistry(Collections.model))
            let places = try #require(back.collections.named("places"))
            let answer = try JSONParser.parse(try await back.fullListSync(session, places, date: date, ifNoneMatch: nil).wholeBody())
            #expect(answer["sync"] == .bool(false), "the date never saw the places: a full answer")
            guard case .array(let items)? = answer["updated"] else { throw SyncError.invalidJSON("\(answer)") }
            #expect(items.map { $0["id"] } == [.string("p1")])
            // A collection the date did see stays answerable.
            let again = try JSONParser.parse(
                try await back.fullListSync(session, try #require(back.collections.named("contacts")), date: date, ifNoneMatch: nil).wholeBody())
            #expect(again["sync"] == .bool(true))
        }
    }

    @Test(
        "a PATCH through an instance still on the previous model keeps the field a newer model added (rolling deploy)",
        arguments: Backend.allCases)
    func patchKeepsNewerFields(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let newer = try Self.family(Self.optionalField)
            #expect(try await ModelRecord.apply(newer, to: store, acceptBreaking: false).map(\.breaking) == [false])
            let session = try await ConcurrencyTests.newFamily(store)
            let updated = SyncEngine(store: store, producers: .testing, collections: CollectionRegistry(newer))
            let old = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let newContacts = try #require(updated.collections.named("contacts"))
            let body: JSONValue = ["firstName": "Ann", "nickname": "Annie"]
            _ = try await updated.put(session, ItemAddress(newContacts, id: "c1"), body: body, preconditions: .init())
            let patched = try await old.patch(
                session, ItemAddress(Collections.contacts, id: "c1"), patch: ["lastName": "Lee"], preconditions: .init())
            let through = try JSONParser.parse(patched.body)
            #expect(through["lastName"] == .string("Lee") && through["nickname"] == .string("Annie"))
            let read = try JSONParser.parse(try await updated.get(session, ItemAddress(newContacts, id: "c1"), ifNoneMatch: nil).body)
            #expect(read["nickname"] == .string("Annie") && read["lastName"] == .string("Lee") && read["firstName"] == .string("Ann"))
            // A PUT is a replacement: it carries the whole item as its sender knows it.
            _ = try await old.put(session, ItemAddress(Collections.contacts, id: "c1"), body: ["firstName": "Ann"], preconditions: .init())
            let replaced = try JSONParser.parse(try await updated.get(session, ItemAddress(newContacts, id: "c1"), ifNoneMatch: nil).body)
            #expect(replaced["nickname"] == nil || replaced["nickname"] == .null)
        }
    }

    /// Security audit 651e0ee L1: instances starting together with `--accept-breaking-changes` each bumped the
    /// generation (1, then 2) and each cached its own, refusing the other's dates. Eight applies at once: one records
    /// the change, the others find it recorded; the generation is bumped once.
    @Test("eight instances applying one breaking change at once bump the generation once", arguments: Backend.allCases)
    func concurrentApplies(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let without = try Self.family(Self.withoutNotes)
            let applied = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 { group.addTask { try await ModelRecord.apply(without, to: store, acceptBreaking: true).count } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(applied.sorted() == [0, 0, 0, 0, 0, 0, 0, 1], "changes each apply made: \(applied)")
            let generations = try ModelGenerations(json: try #require(try await store.modelGenerations()))
            #expect(generations == ModelGenerations(current: 1, touched: ["contacts": 1]))
            #expect(try await Self.servedDigest(store) == without.digest)
        }
    }

    /// Security audit 651e0ee L9: `--accept-breaking-changes` took a list made paginated (or another order, filter,
    /// parent, scope or authorship) without giving its rows the sort keys, tags and authors of the new shape, so they
    /// dropped out of pages and filters. Such a change is now refused even with the flag; renaming a sync endpoint is not.
    @Test(
        "a change of a collection's shape that stored rows cannot follow is refused even when breaking changes are accepted",
        arguments: Backend.allCases)
    func unmigratableShapeRefused(backend: Backend) async throws {
        try await backend.withStore { store in
            try await ModelRecord.apply(Collections.model, to: store, acceptBreaking: false)
            let paginated = try Self.family {
                $0.replacingOccurrences(
                    of: #""kind": "list", "sync": "plcsync","#,
                    with: #""kind": "paginated", "sync": "plcsync", "order": "created","#)
            }
            #expect(paginated.changes(from: Collections.model).contains { !$0.migratable })
            await #expect(throws: ModelError.self) { try await ModelRecord.apply(paginated, to: store, acceptBreaking: true) }
            #expect(try await Self.servedDigest(store) == Collections.model.digest)
            // A sync endpoint renamed: breaking (apps call the old one), but no stored row depends on it.
            let renamed = try Self.family { $0.replacingOccurrences(of: #""sync": "plcsync""#, with: #""sync": "placesync""#) }
            #expect(try await ModelRecord.apply(renamed, to: store, acceptBreaking: true).map(\.migratable) == [true])
            #expect(try await Self.servedDigest(store) == renamed.digest)
        }
    }
}
