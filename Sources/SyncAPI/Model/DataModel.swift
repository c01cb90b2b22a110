import Crypto
import Foundation

/// A deployment's data model (protocol §12): the collections it syncs, their kinds, sync endpoints, fields and rules,
/// read from a model file. The family app of §2–§5 is the default model (`models/family.json`, shipped in the binary
/// as `DataModel.family`); the server's collections (`Collections`) are built from it.
public struct DataModel: Sendable {
    public let name: String
    /// In the file's order.
    public let collections: [Collection]

    /// How a collection syncs.
    public enum Kind: String, Sendable {
        case list, paginated, child, singleton
    }

    /// One collection of the model file.
    public struct Collection: Sendable {
        public let name: String
        public let kind: Kind
        public let sync: String?
        public let fields: [Field]
        public let rules: [Rule]
        public let authored: Bool
        /// Paginated: the child collection, the order (`created` or `lastChildCreated`), its server-set field, the filter.
        public let children: String?
        public let order: String?
        public let orderField: String?
        public let filter: String?
        /// Child: the paginated parent. Singleton: `family` or `account`.
        public let parent: String?
        public let scope: String?
        /// Who reads and who writes (protocol §15): a role, or `author` for writes; nil: readers read, members write.
        public var access: Access? = nil
    }

    /// A collection's `access`: the least role that reads, and the least role that writes (or `author`).
    public struct Access: Sendable, Equatable {
        public let read: String
        public let write: String
        public static let defaults = Access(read: "reader", write: "member")
    }

    /// One field: its type and limits, every implied value filled in.
    public struct Field: Sendable {
        public let name: String
        public let type: FieldKind
        public let required: Bool
        public let defaultValue: JSONValue?
    }

    /// A field's type with its limits.
    public indirect enum FieldKind: Sendable {
        case string(maxLength: Int, choices: [String]?, format: String?)
        case integer(minimum: Double, maximum: Double)
        case number(minimum: Double, maximum: Double)
        case boolean
        case array(items: FieldKind, maxItems: Int)
    }

    /// A rule over several fields.
    public enum Rule: Sendable {
        case requireOneOf([String])
        /// `later` is not before `earlier` (both dates or date-times).
        case notBefore(later: String, earlier: String)
    }

    /// The collection named `name`.
    public func collection(_ name: String) -> Collection? { collections.first { $0.name == name } }

    // MARK: Normalized form

    /// The model as normalized JSON: every implied value filled in, keys sorted, with its `digest` (protocol §12).
    public var normalized: JSONValue {
        let body = normalizedWithoutDigest
        guard case .object(let members) = body else { return body }
        return Self.sorted(.object(members + [("digest", .string(digest))]))
    }

    /// SHA-256 (hex) of the normalized model without its digest: reformatting a file never changes it.
    public var digest: String { Hex.lowercase(SHA256.hash(data: Data(JSONWriter.encode(normalizedWithoutDigest).utf8))) }

    var normalizedWithoutDigest: JSONValue {
        var collections: [(key: String, value: JSONValue)] = []
        for collection in self.collections {
            var members: [(key: String, value: JSONValue)] = [("kind", .string(collection.kind.rawValue))]
            if let sync = collection.sync { members.append(("sync", .string(sync))) }
            if collection.kind != .singleton { members.append(("authored", .bool(collection.authored))) }
            for (key, value) in [
                ("children", collection.children), ("order", collection.order), ("orderField", collection.orderField),
                ("filter", collection.filter), ("parent", collection.parent), ("scope", collection.scope),
            ] {
                if let value { members.append((key, .string(value))) }
            }
            // Only when it is not the default: a model that never names access keeps its digest.
            if let access = collection.access, access != .defaults {
                members.append(("access", .object([("read", .string(access.read)), ("write", .string(access.write))])))
            }
            members.append(("fields", .object(collection.fields.map { ($0.name, Self.json($0)) })))
            members.append(
                (
                    "rules",
                    .array(
                        collection.rules.map { rule in
                            switch rule {
                            case .requireOneOf(let fields): .object([("requireOneOf", .array(fields.map { .string($0) }))])
                            case .notBefore(let later, let earlier): .object([("notBefore", .array([.string(later), .string(earlier)]))])
                            }
                        })
                ))
            collections.append((collection.name, .object(members)))
        }
        return Self.sorted(.object([("model", .string(name)), ("collections", .object(collections))]))
    }

    static func json(_ field: Field) -> JSONValue {
        var members = kindMembers(field.type)
        members.append(("required", .bool(field.required)))
        if let value = field.defaultValue { members.append(("default", value)) }
        return .object(members)
    }

    static func kindMembers(_ kind: FieldKind) -> [(key: String, value: JSONValue)] {
        switch kind {
        case .string(let maxLength, let choices, let format):
            var members: [(key: String, value: JSONValue)] = [("type", .string("string")), ("maxLength", .number(Double(maxLength)))]
            if let choices { members.append(("enum", .array(choices.map { .string($0) }))) }
            if let format { members.append(("format", .string(format))) }
            return members
        case .integer(let minimum, let maximum):
            return [("type", .string("integer")), ("minimum", .number(minimum)), ("maximum", .number(maximum))]
        case .number(let minimum, let maximum):
            return [("type", .string("number")), ("minimum", .number(minimum)), ("maximum", .number(maximum))]
        case .boolean:
            return [("type", .string("boolean"))]
        case .array(let items, let maxItems):
            return [("type", .string("array")), ("items", .object(kindMembers(items))), ("maxItems", .number(Double(maxItems)))]
        }
    }

    /// Objects with their keys sorted, all the way down.
    static func sorted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members): .object(members.map { ($0.key, sorted($0.value)) }.sorted { $0.key < $1.key })
        case .array(let elements): .array(elements.map(sorted))
        default: value
        }
    }
}

/// Why a model file cannot be served: one line naming the collection and the field.
public struct ModelError: Error, CustomStringConvertible, Equatable {
    public let description: String

    public init(_ description: String) { self.description = description }

    init(collection: String, field: String? = nil, _ problem: String) {
        var place = "collection \"\(collection)\""
        if let field { place += ", field \"\(field)\"" }
        description = "\(place): \(problem)"
    }
}
