/// The type and limits of one item field, as protocol §2 states them.
public enum FieldType: Sendable {
    /// A string of 1 to `maxLength` characters.
    case string(maxLength: Int)
    /// An identifier naming another item (format of an item id; existence not checked).
    case reference
    /// A list of strings, each 1 to `maxLength` characters, at most `maxItems` entries.
    case stringList(maxLength: Int, maxItems: Int = Limits.maxListEntries)
    /// A list of identifiers.
    case referenceList(maxItems: Int = Limits.maxListEntries)
    /// A list of strings, each one of a closed set.
    case choiceList([String], maxItems: Int = Limits.maxListEntries)
    /// A whole number within the range (at most ±2^53, exact in JSON).
    case integer(ClosedRange<Double>)
    case bool
    /// RFC 3339 date-time.
    case dateTime
    /// RFC 3339 full-date `YYYY-MM-DD`.
    case date
    /// A finite number within the range.
    case number(ClosedRange<Double>)
    /// An `http` or `https` URL of at most 2048 characters.
    case url
    /// One of a closed set of strings.
    case oneOf([String])
}

/// One field of a collection's schema: its name, type, and whether a client must send it.
public struct FieldSpec: Sendable {
    public let name: String
    public let type: FieldType
    public let required: Bool
    /// The stored value when the client omits the field or sends `null`.
    public let defaultValue: JSONValue

    public init(_ name: String, _ type: FieldType, required: Bool = false, default defaultValue: JSONValue? = nil) {
        self.name = name
        self.type = type
        self.required = required
        switch (defaultValue, type) {
        case (let value?, _): self.defaultValue = value
        case (nil, .stringList), (nil, .referenceList), (nil, .choiceList): self.defaultValue = .array([])
        default: self.defaultValue = .null
        }
    }
}

/// Protocol limits shared by every schema.
public enum Limits {
    public static let nameLength = 256
    public static let textLength = 10_000
    public static let urlLength = 2048
    public static let maxListEntries = 100
}
