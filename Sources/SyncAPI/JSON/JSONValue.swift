/// A parsed JSON value that keeps object keys in document order.
///
/// The server parses request bodies into this type (not `Codable`) so that validation can name the exact
/// offending field, numbers keep their value, and output can be written deterministically.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            let bd = Dictionary(b.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            return a.allSatisfy { bd[$0.key] == $0.value }
        default: return false
        }
    }

    /// The member named `key` of an object, if any.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The string payload, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
