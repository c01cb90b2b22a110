/// Writes JSON text deterministically: object members in the order given, numbers in their shortest form.
///
/// Stored items and every answer are written with this, so identical content always has identical bytes.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// The written text.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }
    public mutating func raw<C: Collection>(bytes other: C) where C.Element == UInt8 { bytes.append(contentsOf: other) }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): raw(b ? "true" : "false")
        case .number(let n): number(n)
        case .string(let s): string(s)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                string(member.key)
                bytes.append(UInt8(ascii: ":"))
                self.value(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func number(_ n: Double) {
        if n == n.rounded(), abs(n) < 1e15 {
            raw(String(Int64(n)))
        } else {
            raw("\(n)")
        }
    }

    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                raw("\\u00")
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes a whole value and returns its text.
    public static func encode(_ value: JSONValue) -> String {
        var writer = JSONWriter()
        writer.value(value)
        return writer.string
    }
}
