/// Validates a client's item body and turns it into the canonical content the server stores.
///
/// Canonical content lists every declared field in declaration order, defaults applied, so two bodies that
/// mean the same thing have the same bytes (an identical PUT then changes nothing).
public struct ItemSchema: Sendable {
    /// A rule over several fields (e.g. "`end` not before `start`"), run after each field is valid.
    public typealias Rule = @Sendable ([String: JSONValue]) throws -> Void

    public let fields: [FieldSpec]
    public let rules: [Rule]
    /// Fields that the server sets; a client may send them back and they are ignored (protocol §2, §12): `modified`,
    /// `author`, `created`, `nomore`, and the model's order fields and children arrays.
    public let serverSetFields: Set<String>

    public init(fields: [FieldSpec], rules: [Rule] = [], serverSetFields: Set<String> = ItemSchema.baseServerSetFields) {
        self.fields = fields
        self.rules = rules
        self.serverSetFields = serverSetFields
    }

    /// Server-set names of every model.
    public static let baseServerSetFields: Set<String> = ["modified", "author", "created", "nomore"]

    /// Validates `body` for the item at `pathID` and returns its canonical content (without `id` and server fields).
    /// With no `pathID` (account bodies), an `id` member is an unknown field.
    public func canonicalContent(of body: JSONValue, pathID: String?) throws -> [(key: String, value: JSONValue)] {
        guard case .object(let members) = body else { throw SyncError.invalidJSON("The body must be a JSON object.") }
        var given: [String: JSONValue] = [:]
        let declared = Set(fields.map(\.name))
        for member in members {
            if member.key == "id", let pathID {
                guard case .string(let id) = member.value, id == pathID else {
                    throw SyncError.invalidID("The body's id differs from the id in the path.")
                }
                continue
            }
            if serverSetFields.contains(member.key) && !declared.contains(member.key) { continue }
            guard declared.contains(member.key) else { throw SyncError.unknownField(member.key) }
            given[member.key] = member.value
        }
        var content: [(key: String, value: JSONValue)] = []
        var values: [String: JSONValue] = [:]
        for field in fields {
            let value: JSONValue
            if let raw = given[field.name], raw != .null {
                value = try Self.validate(raw, as: field)
            } else if field.required {
                throw SyncError.invalidField(field.name, "\(field.name) is required.")
            } else {
                value = field.defaultValue
            }
            values[field.name] = value
            content.append((field.name, value))
        }
        for rule in rules { try rule(values) }
        return content
    }

    static func validate(_ value: JSONValue, as field: FieldSpec) throws -> JSONValue {
        let name = field.name
        switch field.type {
        case .string(let maxLength):
            return .string(try string(value, name, maxLength: maxLength))
        case .reference:
            let s = try string(value, name, maxLength: 64)
            guard ItemID.isValid(s) else { throw SyncError.invalidField(name, "\(name) is not a valid id.") }
            return .string(s)
        case .stringList(let maxLength, let maxItems):
            return .array(
                try list(value, name, maxItems: maxItems).map { element throws in .string(try string(element, name, maxLength: maxLength)) })
        case .choiceList(let choices, let maxItems):
            return .array(
                try list(value, name, maxItems: maxItems).map { element throws in
                    guard case .string(let s) = element, choices.contains(s) else {
                        throw SyncError.invalidField(name, "\(name) holds a value not one of \(choices.joined(separator: ", ")).")
                    }
                    return element
                })
        case .integer(let range):
            guard case .number(let n) = value, n == n.rounded(), range.contains(n) else {
                throw SyncError.invalidField(
                    name, "\(name) must be a whole number from \(Int64(range.lowerBound)) to \(Int64(range.upperBound)).")
            }
            return value
        case .referenceList(let maxItems):
            return .array(
                try list(value, name, maxItems: maxItems).map { element throws in
                    let s = try string(element, name, maxLength: 64)
                    guard ItemID.isValid(s) else { throw SyncError.invalidField(name, "\(name) holds an invalid id.") }
                    return .string(s)
                })
        case .bool:
            guard case .bool = value else { throw SyncError.invalidField(name, "\(name) must be true or false.") }
            return value
        case .dateTime:
            let s = try string(value, name, maxLength: 64)
            guard Timestamp.parseDateTime(s) != nil else {
                throw SyncError.invalidField(name, "\(name) must be an RFC 3339 date-time.")
            }
            return .string(s)
        case .date:
            let s = try string(value, name, maxLength: 10)
            guard Timestamp.parseDate(s) != nil else { throw SyncError.invalidField(name, "\(name) must be a date YYYY-MM-DD.") }
            return .string(s)
        case .number(let range):
            guard case .number(let n) = value, range.contains(n) else {
                throw SyncError.invalidField(name, "\(name) must be a number from \(range.lowerBound) to \(range.upperBound).")
            }
            return value
        case .url:
            let s = try string(value, name, maxLength: Limits.urlLength)
            if MediaURL.isMediaURL(s) { return .string(s) }
            let lower = s.lowercased()
            guard (lower.hasPrefix("http://") && s.utf8.count > 7) || (lower.hasPrefix("https://") && s.utf8.count > 8),
                !s.contains(where: { $0 == " " || $0.isNewline })
            else { throw SyncError.invalidField(name, "\(name) must be an http or https URL, or a media URL of this server.") }
            return .string(s)
        case .oneOf(let choices):
            guard case .string(let s) = value, choices.contains(s) else {
                throw SyncError.invalidField(name, "\(name) must be one of \(choices.joined(separator: ", ")).")
            }
            return value
        }
    }

    private static func string(_ value: JSONValue, _ name: String, maxLength: Int) throws -> String {
        guard case .string(let s) = value else { throw SyncError.invalidField(name, "\(name) must be a string.") }
        guard !s.isEmpty else { throw SyncError.invalidField(name, "\(name) must not be empty.") }
        try TextRules.check(s, name, maxLength: maxLength)
        return s
    }

    private static func list(_ value: JSONValue, _ name: String, maxItems: Int) throws -> [JSONValue] {
        guard case .array(let elements) = value else { throw SyncError.invalidField(name, "\(name) must be a list.") }
        guard elements.count <= maxItems else {
            throw SyncError.invalidField(name, "\(name) holds more than \(maxItems) entries.")
        }
        return elements
    }
}

/// The rules for item ids chosen by clients (protocol §2).
public enum ItemID {
    /// 1–64 chars of `[A-Za-z0-9._:-]`, not `.` or `..`.
    public static func isValid(_ id: String) -> Bool {
        id != "." && id != ".." && ASCIIToken.matches(id, length: 1...64, punctuation: "._:-")
    }
}
