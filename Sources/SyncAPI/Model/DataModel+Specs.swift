/// The server's collection declarations built from a model (protocol §12): what the engine, the routes and the
/// validation read.
extension DataModel {
    /// One `CollectionSpec` per collection, in the file's order.
    public var specs: [CollectionSpec] { collections.map(spec) }

    func spec(_ collection: Collection) -> CollectionSpec {
        let kind: CollectionKind =
            switch collection.kind {
            case .list: .fullList
            case .paginated: .paginated
            case .child: .child(parent: collection.parent ?? "")
            case .singleton: .singleton(perAccount: collection.scope == "account")
            }
        var sortKey: SortKey?
        switch collection.kind {
        case .paginated: sortKey = collection.orderField.map { .lastChildCreated(field: $0) } ?? .created
        case .child: sortKey = .created
        default: sortKey = nil
        }
        // A list answered in the same endpoint as a family-scoped singleton is part of it: its changes change it
        // (§2: a change to the list of members changes the family).
        let serverSetFields = self.serverSetFields
        let changesFamily =
            collection.kind == .list
            && collections.contains { $0.kind == .singleton && $0.scope == "family" && $0.sync == collection.sync }
        return CollectionSpec(
            name: collection.name, kind: kind,
            schema: ItemSchema(
                fields: collection.fields.map { FieldSpec($0.name, Self.fieldType($0.type), required: $0.required, default: $0.defaultValue) },
                rules: collection.rules.map(Self.check), serverSetFields: serverSetFields),
            syncEndpoint: collection.kind == .list && changesFamily ? nil : collection.sync, sortKey: sortKey,
            childName: collection.children, filterField: collection.filter, authored: collection.authored, changesFamily: changesFamily,
            access: CollectionAccess(collection.access ?? .defaults), privateToAccount: collection.kind == .list && collection.scope == "account")
    }

    /// The names the server sets on some item of the model, ignored when any client sends them on any collection
    /// (protocol §2: "on every collection", so an app can send back an object exactly as it received it): the base
    /// ones, every order field and every children array.
    var serverSetFields: Set<String> {
        ItemSchema.baseServerSetFields.union(collections.flatMap { [$0.orderField, $0.children].compactMap { $0 } })
    }

    /// The validation type of a model field.
    static func fieldType(_ kind: FieldKind) -> FieldType {
        switch kind {
        case .string(let maxLength, let choices, let format):
            if let choices { return .oneOf(choices) }
            switch format {
            case "date": return .date
            case "date-time": return .dateTime
            case "uri": return .url
            case "reference": return .reference
            default: return .string(maxLength: maxLength)
            }
        case .integer(let minimum, let maximum): return .integer(minimum...maximum)
        case .number(let minimum, let maximum): return .number(minimum...maximum)
        case .boolean: return .bool
        case .array(let items, let maxItems):
            switch items {
            case .string(_, let choices?, _): return .choiceList(choices, maxItems: maxItems)
            case .string(_, nil, "reference"): return .referenceList(maxItems: maxItems)
            case .string(let maxLength, _, _): return .stringList(maxLength: maxLength, maxItems: maxItems)
            default: return .stringList(maxLength: defaultMaxLength, maxItems: maxItems)
            }
        }
    }

    /// A date-time's instant, or a date's midnight UTC, in milliseconds.
    static func instant(_ text: String) -> Int64? {
        Timestamp.parseDateTime(text) ?? (text.utf8.count == 10 ? Timestamp.parseDateTime(text + "T00:00:00Z") : nil)
    }

    /// A rule as the schema runs it, with §2's messages.
    static func check(_ rule: Rule) -> ItemSchema.Rule {
        switch rule {
        case .requireOneOf(let fields):
            return { values throws in
                if fields.allSatisfy({ values[$0] == nil || values[$0] == .null }) {
                    let list = fields.count == 2 ? "\(fields[0]) or \(fields[1])" : "one of \(fields.joined(separator: ", "))"
                    throw SyncError.invalidField(fields[0], "\(list) is required.")
                }
            }
        case .notBefore(let later, let earlier):
            return { values throws in
                if case .string(let a)? = values[later], case .string(let b)? = values[earlier], let l = instant(a), let e = instant(b), l < e {
                    throw SyncError.invalidField(later, "\(later) must not be before \(earlier).")
                }
            }
        }
    }
}
