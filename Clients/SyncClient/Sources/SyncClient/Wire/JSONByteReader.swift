import Foundation

/// A pull reader of JSON text that arrives in pieces (a sync answer read back from its file): it walks the structure of the
/// envelope value by value, and hands a whole value (an item) as the bytes it was sent as, so nothing but the value at
/// hand is ever held. Pieces come from `pull` (nil at the end), which may block.
struct JSONByteReader {
    /// Bytes received and not yet released; `position` is the next byte to read.
    private(set) var buffer: [UInt8] = []
    private(set) var position = 0
    /// The start of a value being captured: kept when more bytes are pulled.
    private var mark: Int?
    private var ended = false
    private let pull: () throws -> Data?
    /// Most bytes one captured value may take (a protection against an answer that never closes a value): past it,
    /// reading throws `answer_too_large`. A skipped value is not held, whatever its size.
    let valueLimit: Int

    init(valueLimit: Int = 256 * 1024 * 1024, pull: @escaping () throws -> Data?) {
        self.valueLimit = valueLimit
        self.pull = pull
        buffer.reserveCapacity(128 * 1024)
    }

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    private func malformed(_ what: String) -> Malformed { Malformed(description: "\(what) at byte \(position)") }

    /// Pulls the next piece; false at the end of the input. Bytes before the mark (or the position) are released.
    private mutating func refill() throws -> Bool {
        if ended { return false }
        guard let piece = try pull() else {
            ended = true
            return false
        }
        let keep = mark ?? position
        // Released in bulk (not at every piece): a long captured value is not moved again and again.
        if keep > 0, keep >= buffer.count / 2 || keep > 1 << 20 {
            buffer.removeSubrange(0..<keep)
            position -= keep
            if mark != nil { mark = 0 }
        }
        if let mark, buffer.count - mark + piece.count > valueLimit {
            throw SyncClientError.answerTooLarge(status: 200, limit: valueLimit, what: "a value of the answer")
        }
        buffer.append(contentsOf: piece)
        return true
    }

    /// The next byte that is not white space, not consumed; nil at the end of the input.
    mutating func peek() throws -> UInt8? {
        while true {
            while position < buffer.count {
                switch buffer[position] {
                case 0x20, 0x0A, 0x0D, 0x09: position += 1
                default: return buffer[position]
                }
            }
            if !(try refill()) { return nil }
        }
    }

    /// Consumes `byte` (after white space), or throws.
    mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else { throw malformed("expected '\(Character(Unicode.Scalar(byte)))'") }
        position += 1
    }

    /// Consumes `byte` when it comes next (after white space).
    mutating func consume(_ byte: UInt8) throws -> Bool {
        guard try peek() == byte else { return false }
        position += 1
        return true
    }

    /// Opens an object; then `nextKey` walks its members.
    mutating func beginObject() throws { try expect(UInt8(ascii: "{")) }

    /// The key of the object's next member, positioned on its value (which the caller must read or skip); nil after
    /// the last member (the object is closed). `first` is true for the first call on an object.
    mutating func nextKey(_ first: inout Bool) throws -> String? {
        if try consume(UInt8(ascii: "}")) { return nil }
        if !first { try expect(UInt8(ascii: ",")) }
        first = false
        let key = try readString()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// Opens an array; then `nextElement` walks its elements.
    mutating func beginArray() throws { try expect(UInt8(ascii: "[")) }

    /// Whether the array has a next element, positioned on it (the caller must read or skip it); false after the last
    /// (the array is closed). `first` is true for the first call on an array.
    mutating func nextElement(_ first: inout Bool) throws -> Bool {
        if try consume(UInt8(ascii: "]")) { return false }
        if !first { try expect(UInt8(ascii: ",")) }
        first = false
        return true
    }

    /// Whether the next value is `null` (consumed if so).
    mutating func consumeNull() throws -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try withValue { bytes in
            guard bytes.elementsEqual("null".utf8) else { throw Malformed(description: "expected null") }
        }
        return true
    }

    /// A string value, unescaped.
    mutating func readString() throws -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw malformed("expected a string") }
        return try withValue { bytes in
            // Plain strings (no escape) are most: their bytes are the string.
            if !bytes.contains(UInt8(ascii: "\\")) {
                guard let text = String(validating: bytes.dropFirst().dropLast(), as: UTF8.self) else {
                    throw Malformed(description: "a string that is not UTF-8")
                }
                return text
            }
            guard case .string(let text) = try JSONValue.parse(Data(bytes)) else { throw Malformed(description: "expected a string") }
            return text
        }
    }

    /// A boolean value.
    mutating func readBool() throws -> Bool {
        try withValue { bytes in
            if bytes.elementsEqual("true".utf8) { return true }
            if bytes.elementsEqual("false".utf8) { return false }
            throw Malformed(description: "expected a boolean")
        }
    }

    /// An integer value.
    mutating func readInt() throws -> Int {
        try withValue { bytes in
            guard let value = Int(String(decoding: bytes, as: UTF8.self)) else { throw Malformed(description: "expected an integer") }
            return value
        }
    }

    /// Any value, as a `JSONValue`.
    mutating func readValue() throws -> JSONValue {
        try withValue { bytes in try JSONValue.parse(Data(bytes)) }
    }

    /// A value decoded as `T`, straight from its bytes.
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try withValue { bytes in try JSONDecoder().decode(type, from: Data(bytes)) }
    }

    /// Skips a value, without holding it (its bytes are released as it is read).
    mutating func skipValue() throws {
        guard let first = try peek() else { throw malformed("the answer ends early") }
        try scanValue(first)
    }

    /// Reads one whole value and hands its bytes, exactly as sent, to `body` (valid during the call only).
    mutating func withValue<T>(_ body: (ArraySlice<UInt8>) throws -> T) throws -> T {
        guard let first = try peek() else { throw malformed("the answer ends early") }
        mark = position
        defer { mark = nil }
        try scanValue(first)
        // The mark is the value's start, whatever bytes were released meanwhile. A value that came whole in one piece
        // is held to the limit too.
        guard position - mark! <= valueLimit else {
            throw SyncClientError.answerTooLarge(status: 200, limit: valueLimit, what: "a value of the answer")
        }
        return try body(buffer[mark!..<position])
    }

    /// Moves past the value starting at the position, whose first byte is `first`.
    private mutating func scanValue(_ first: UInt8) throws {
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["): try scanContainer()
        case UInt8(ascii: "\""):
            position += 1
            try scanStringRest()
        default: try scanScalar()
        }
    }

    /// Moves past the end of the string whose opening quote is consumed.
    private mutating func scanStringRest() throws {
        while true {
            while position < buffer.count {
                let byte = buffer[position]
                position += 1
                if byte == UInt8(ascii: "\"") { return }
                if byte == UInt8(ascii: "\\") {
                    if position == buffer.count, !(try refill()) { throw malformed("the answer ends in a string") }
                    position += 1
                }
            }
            if !(try refill()) { throw malformed("the answer ends in a string") }
        }
    }

    /// Moves past the object or array starting at the position.
    private mutating func scanContainer() throws {
        var depth = 0
        while true {
            while position < buffer.count {
                let byte = buffer[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""): try scanStringRest()
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return }
                default: continue
                }
            }
            if !(try refill()) { throw malformed("the answer ends in a value") }
        }
    }

    /// Moves past a number or a literal.
    private mutating func scanScalar() throws {
        while true {
            while position < buffer.count {
                switch buffer[position] {
                case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), 0x20, 0x0A, 0x0D, 0x09: return
                default: position += 1
                }
            }
            if !(try refill()) { return }
        }
    }

    /// Whether the input holds nothing more than white space.
    mutating func atEnd() throws -> Bool { try peek() == nil }
}
