/// A JSON number kept as the server wrote it: integers stay exact 64-bit integers (ids, counts, timestamps beyond
/// 2^53 survive), other numbers are the nearest `Double`, written back in its shortest round-trip form.
public struct JSONNumber: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral
{
    enum Storage: Sendable { case integer(Int64), double(Double) }

    let storage: Storage

    public init(_ value: Int64) { storage = .integer(value) }
    public init(_ value: Int) { storage = .integer(Int64(value)) }
    public init(_ value: Double) { storage = .double(value) }
    public init(integerLiteral value: Int64) { storage = .integer(value) }
    public init(floatLiteral value: Double) { storage = .double(value) }

    /// The exact integer, when the number is one that fits in 64 bits.
    public var int64Value: Int64? {
        switch storage {
        case .integer(let value): return value
        case .double(let value): return value.rounded() == value && abs(value) < 9.2e18 ? Int64(value) : nil
        }
    }

    /// The number as an `Int`, when it is an integer.
    public var intValue: Int? { int64Value.map { Int($0) } }

    /// The number as a `Double` (may round integers beyond 2^53).
    public var doubleValue: Double {
        switch storage {
        case .integer(let value): return Double(value)
        case .double(let value): return value
        }
    }

    public var description: String {
        switch storage {
        case .integer(let value): return String(value)
        case .double(let value): return "\(value)"
        }
    }

    /// Numbers compare by value: `1` equals `1.0`.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case (.integer(let a), .integer(let b)): return a == b
        default:
            if let a = lhs.int64Value, let b = rhs.int64Value { return a == b }
            return lhs.doubleValue == rhs.doubleValue
        }
    }

    public func hash(into hasher: inout Hasher) {
        if let value = int64Value { hasher.combine(value) } else { hasher.combine(doubleValue) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int64.self) {
            storage = .integer(value)
        } else {
            storage = .double(try container.decode(Double.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch storage {
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        }
    }
}
