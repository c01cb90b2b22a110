import Foundation
import SyncAPI
import TestSupport
import Testing

/// Evolution of the served model (protocol §12): additive changes apply live, breaking ones are refused with their
/// list unless accepted, and then every earlier date of sync answers `sync: false`.
@Suite("Model evolution")
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

    @Test("the database records its model: additive changes live, breaking ones refused unless accepted (new epoch)", arguments: Backend.allCases)
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
            // Breaking: refused, nothing changed; accepted, the database takes a new id (earlier dates: sync false).
            let narrower = try Self.family { $0.replacingOccurrences(of: #""maxLength": 64"#, with: #""maxLength": 32"#) }
            await #expect(throws: ModelError.self) { try await ModelRecord.apply(narrower, to: store, acceptBreaking: false) }
            #expect(try await Self.servedDigest(store) == wider.digest)
            #expect(try await store.databaseID() == id)
            let applied = try await ModelRecord.apply(narrower, to: store, acceptBreaking: true)
            #expect(applied.contains { $0.breaking })
            #expect(try await store.databaseID() != id)
        }
    }
}
