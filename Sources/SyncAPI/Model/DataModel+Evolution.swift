/// What changes between the model a database last served and the one it is asked to serve (protocol §12).
///
/// Additive changes (a new collection, an optional field without a default, a new `enum` value, a wider limit, a
/// rule taken away) change nothing that stored items read as or that a client already holds: they apply live.
/// Anything else is breaking: the server refuses it unless the operator accepts it.
extension DataModel {
    /// One difference, named by collection and field.
    public struct Change: Sendable, CustomStringConvertible, Equatable {
        public let collection: String
        public let field: String?
        public let what: String
        public let breaking: Bool
        /// False for a change the server cannot bring stored rows to (a collection's kind, order, filter, parent,
        /// children, scope or authorship: rows carry sort keys, tags, parents and authors of the old shape): refused
        /// even with `--accept-breaking-changes` (a list made paginated, for one, would lose its rows, which have no
        /// sort key, from its pages).
        public var migratable = true

        public var description: String {
            var place = "collection \"\(collection)\""
            if let field { place += ", field \"\(field)\"" }
            return "\(place): \(what)"
        }
    }

    /// The changes from `old` to this model, additive and breaking, in file order.
    public func changes(from old: DataModel) -> [Change] {
        var out: [Change] = []
        for gone in old.collections where collection(gone.name) == nil {
            out.append(Change(collection: gone.name, field: nil, what: "removed", breaking: true))
        }
        for new in collections {
            guard let before = old.collection(new.name) else {
                out.append(Change(collection: new.name, field: nil, what: "added", breaking: false))
                continue
            }
            let shape: [(String, String?, String?)] = [
                ("kind", before.kind.rawValue, new.kind.rawValue), ("sync", before.sync, new.sync), ("order", before.order, new.order),
                ("orderField", before.orderField, new.orderField), ("children", before.children, new.children),
                ("parent", before.parent, new.parent), ("scope", before.scope, new.scope), ("filter", before.filter, new.filter),
                ("authored", "\(before.authored)", "\(new.authored)"),
            ]
            for (key, a, b) in shape where a != b {
                var change = Change(collection: new.name, field: nil, what: "\(key) changed from \(a ?? "none") to \(b ?? "none")", breaking: true)
                // A sync endpoint's name is the only part of a collection's shape that no stored row depends on.
                change.migratable = key == "sync"
                out.append(change)
            }
            // Who reads must not change under a client's date (§15): a breaking change, so every client reloads the list.
            // Who writes is checked per call: a change applies to the next write.
            let (readBefore, readNow) = ((before.access ?? .defaults).read, (new.access ?? .defaults).read)
            if readBefore != readNow {
                out.append(Change(collection: new.name, field: nil, what: "access read changed from \(readBefore) to \(readNow)", breaking: true))
            }
            for gone in before.fields where !new.fields.contains(where: { $0.name == gone.name }) {
                out.append(Change(collection: new.name, field: gone.name, what: "removed (its stored values are dropped)", breaking: true))
            }
            for field in new.fields {
                guard let was = before.fields.first(where: { $0.name == field.name }) else {
                    let optional = !field.required && field.defaultValue == nil
                    out.append(
                        Change(
                            collection: new.name, field: field.name,
                            what: optional ? "added" : "added \(field.required ? "as required" : "with a default")", breaking: !optional))
                    continue
                }
                out += Self.fieldChanges(from: was, to: field, in: new.name)
            }
            let oldRules = before.rules.map { Self.json($0) }
            let newRules = new.rules.map { Self.json($0) }
            for rule in newRules where !oldRules.contains(rule) {
                out.append(Change(collection: new.name, field: nil, what: "rule \(JSONWriter.encode(rule)) added", breaking: true))
            }
            for rule in oldRules where !newRules.contains(rule) {
                out.append(Change(collection: new.name, field: nil, what: "rule \(JSONWriter.encode(rule)) removed", breaking: false))
            }
        }
        return out
    }

    static func json(_ rule: Rule) -> JSONValue {
        switch rule {
        case .requireOneOf(let fields): .object([("requireOneOf", .array(fields.map { .string($0) }))])
        case .notBefore(let later, let earlier): .object([("notBefore", .array([.string(later), .string(earlier)]))])
        }
    }

    static func fieldChanges(from was: Field, to now: Field, in collection: String) -> [Change] {
        var out: [Change] = []
        func change(_ what: String, breaking: Bool) { out.append(Change(collection: collection, field: now.name, what: what, breaking: breaking)) }
        if was.required != now.required { change(now.required ? "now required" : "no longer required", breaking: now.required) }
        if was.defaultValue != now.defaultValue { change("default changed", breaking: true) }
        kindChanges(from: was.type, to: now.type, change)
        return out
    }

    static func kindChanges(from was: FieldKind, to now: FieldKind, _ change: (String, Bool) -> Void) {
        switch (was, now) {
        case (.string(let l0, let c0, let f0), .string(let l1, let c1, let f1)):
            if l1 != l0 { change("maxLength \(l0) → \(l1)", l1 < l0) }
            if f1 != f0 { change("format \(f0 ?? "none") → \(f1 ?? "none")", true) }
            switch (c0, c1) {
            case (nil, nil): break
            case (let a?, let b?):
                if !a.allSatisfy(b.contains) { change("enum values removed", true) }
                if !b.allSatisfy(a.contains) { change("enum values added", false) }
            default: change(c1 == nil ? "enum removed" : "enum added", c1 != nil)
            }
        case (.integer(let min0, let max0), .integer(let min1, let max1)), (.number(let min0, let max0), .number(let min1, let max1)):
            if min1 != min0 { change("minimum \(min0) → \(min1)", min1 > min0) }
            if max1 != max0 { change("maximum \(max0) → \(max1)", max1 < max0) }
        case (.integer, .number):
            change("integer → number", false)
        case (.boolean, .boolean):
            break
        case (.array(let items0, let max0), .array(let items1, let max1)):
            if max1 != max0 { change("maxItems \(max0) → \(max1)", max1 < max0) }
            kindChanges(from: items0, to: items1) { what, breaking in change("items: \(what)", breaking) }
        default:
            change("type changed", true)
        }
    }
}

/// The model a database serves, recorded by `migrate` and `serve` (protocol §12, evolution).
public enum ModelRecord {
    /// Checks `model` against the one `store` last served and records it. The first model, the same model, or
    /// additive changes are recorded at once; breaking changes are refused (a `ModelError` listing them) unless
    /// `acceptBreaking`, and then a new model generation marks the collections they touched: a date of sync issued
    /// before answers `sync: false` for those (the client reloads them) and stays answerable for the others.
    /// Returns the changes applied.
    ///
    /// Instances starting together each decide against what they read, and only the first records its decision; the
    /// others decide again against it (the same model: nothing more to do), so a generation is bumped once.
    @discardableResult
    public static func apply(_ model: DataModel, to store: any SchemaStore, acceptBreaking: Bool) async throws -> [DataModel.Change] {
        // Each retry follows another instance's record; a model recorded over and over by others is not waited on.
        for _ in 0..<100 {
            if let changes = try await applyOnce(model, to: store, acceptBreaking: acceptBreaking) { return changes }
        }
        throw ModelError("the model this database serves changed 100 times while this instance started; start it again")
    }

    /// One decision against the recorded model: the changes applied, or nil when another instance recorded first.
    private static func applyOnce(_ model: DataModel, to store: any SchemaStore, acceptBreaking: Bool) async throws -> [DataModel.Change]? {
        let normalized = JSONWriter.encode(model.normalized)
        let generationsBefore = try await store.modelGenerations()
        guard let recorded = try await store.servedModel() else {
            let recorded = try await store.recordModel(
                normalized, generations: nil, expected: RecordedModel(model: nil, generations: generationsBefore))
            return recorded ? [] : nil
        }
        let old: DataModel
        do {
            old = try DataModel(json: Array(recorded.utf8))
        } catch {
            throw ModelError("the model this database served before cannot be read back: \(error.description)")
        }
        guard old.digest != model.digest else { return [] }
        let changes = model.changes(from: old)
        let unmigratable = changes.filter { !$0.migratable }
        if !unmigratable.isEmpty {
            throw ModelError(
                "the model changes the shape of collections that hold stored rows, which the server cannot move to it; nothing was changed:\n  "
                    + unmigratable.map(\.description).joined(separator: "\n  ")
                    + "\nServe the new shape under a new collection name (removing the old one is a breaking change) and have the apps copy their data."
            )
        }
        let breaking = changes.filter(\.breaking)
        if !breaking.isEmpty && !acceptBreaking {
            throw ModelError(
                "the model changes what stored items read as or may refuse; nothing was changed. Breaking changes:\n  "
                    + breaking.map(\.description).joined(separator: "\n  ")
                    + "\nPass --accept-breaking-changes to apply them (every client then reloads its data).")
        }
        // Stored bodies take the new fields' shape first (idempotent: a failure here records nothing, and the next
        // start does it again): removed fields dropped, added ones filled with null or their default.
        for collection in model.collections {
            guard let before = old.collection(collection.name), before.fields.map(\.name) != collection.fields.map(\.name),
                let spec = CollectionRegistry(model).named(collection.name)
            else { continue }
            let removed = Set(before.fields.map(\.name)).subtracting(collection.fields.map(\.name))
            let schema = spec.schema
            _ = try await store.rewriteBodies(collection: collection.name) { body in ItemBody.reshaped(body, schema, removed: removed) }
        }
        // A collection added back after a breaking change removed it has rows that dates issued meanwhile never
        // saw: it starts a new generation too, so that those dates answer it `sync: false` (a full answer).
        let marks = try generationsBefore.map { try ModelGenerations(json: $0) } ?? ModelGenerations()
        let readded = changes.filter { $0.field == nil && $0.what == "added" && marks.touched[$0.collection] != nil }
        var generations: String?
        if !breaking.isEmpty || !readded.isEmpty {
            generations = marks.next(touching: Set((breaking + readded).map(\.collection)), in: [model, old]).json
        }
        let expected = RecordedModel(model: recorded, generations: generationsBefore)
        guard try await store.recordModel(normalized, generations: generations, expected: expected) else { return nil }
        return changes
    }
}
