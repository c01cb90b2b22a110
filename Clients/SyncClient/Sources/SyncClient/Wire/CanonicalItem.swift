/// The replica's text of a server item made straight from the bytes the item came in, without building a
/// `JSONValue` or running `JSONEncoder`: the same bytes as `Replica.serverRow` (compact JSON, keys sorted, the
/// children array and `nomore` left out), for the items this fast path can vouch for.
///
/// It reorders the members of objects and copies every scalar as sent, which is exact when each scalar is already
/// written the way `JSONEncoder` writes its decoded value: strings with only the escapes `JSONEncoder` uses (`\"`,
/// `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, `\u00xx` for other control characters) and valid UTF-8, integers in 64 bits
/// without a sign on zero, leading zeros, fraction or exponent, and keys of printable ASCII (whose sorted order is
/// then their byte order). The server writes its items that way. Anything else (a fractional number, a `\u` escape,
/// a duplicate key, a missing `id`, malformed JSON) answers false, and the caller takes the reference path.
struct CanonicalItem {
    /// The text (valid after `make` answered true).
    private(set) var text: [UInt8] = []
    private(set) var id = ""
    private(set) var sortKey = ""
    /// Members of the objects being written, innermost last.
    private var members: [ObjectMember] = []

    /// Deepest nesting handled here (deeper items take the reference path).
    private static let maximumDepth = 32

    init() {
        text.reserveCapacity(4096)
        members.reserveCapacity(64)
    }

    /// Makes the text of `bytes` (one item), its id and its sort key (`sortField`'s string, "~" when absent; "" with
    /// no sort field); `children` names the member that carries a paginated item's children. False: the reference
    /// path must be taken.
    mutating func make(_ bytes: ArraySlice<UInt8>, sortField: String?, children: String? = nil) -> Bool {
        text.removeAll(keepingCapacity: true)
        members.removeAll(keepingCapacity: true)
        return bytes.withUnsafeBufferPointer { input in
            var ascii = true
            for byte in input where byte >= 0x80 {
                ascii = false
                break
            }
            // Bytes that are not UTF-8 are for the reference path to refuse.
            if !ascii, String(validating: input, as: UTF8.self) == nil { return false }
            var reader = Walker(input: input)
            return writeItem(&reader, sortField: sortField, children: children)
        }
    }

    /// The top level: an object whose `id` is a plain string; its children and `nomore` left out.
    private mutating func writeItem(_ walker: inout Walker, sortField: String?, children: String?) -> Bool {
        var index = walker.skipSpace(0)
        guard index < walker.count, walker[index] == UInt8(ascii: "{") else { return false }
        let base = members.count
        guard let end = collectMembers(&walker, from: index) else { return false }
        index = walker.skipSpace(end)
        guard index == walker.count else { return false }
        var foundID: String?
        var foundSortKey: String?
        for member in members[base...] {
            if walker.equals(member, "id") {
                guard let value = walker.plainString(member.valueStart, member.valueEnd) else { return false }
                foundID = value
            } else if let sortField, walker.equals(member, sortField) {
                // A sort field that is not a string sorts as a missing one ("~"), as `Replica.sortKey` says.
                foundSortKey = walker.plainString(member.valueStart, member.valueEnd)
                if foundSortKey == nil, walker[member.valueStart] == UInt8(ascii: "\"") { return false }
            }
        }
        guard let foundID else { return false }
        id = foundID
        sortKey = sortField == nil ? "" : foundSortKey ?? "~"
        return writeMembers(&walker, from: base, depth: 0, skip: (children ?? "nomore", "nomore"))
    }

    /// Reads the members of the object at `start` onto `members` (keys checked, values skipped); the index after it.
    private mutating func collectMembers(_ walker: inout Walker, from start: Int) -> Int? {
        var index = walker.skipSpace(start + 1)
        guard index < walker.count else { return nil }
        if walker[index] == UInt8(ascii: "}") { return index + 1 }
        while true {
            guard index < walker.count, walker[index] == UInt8(ascii: "\"") else { return nil }
            let keyStart = index + 1
            var keyEnd = keyStart
            while keyEnd < walker.count, walker[keyEnd] != UInt8(ascii: "\"") {
                // Printable ASCII without escapes: its byte order is `JSONEncoder`'s sorted order.
                let byte = walker[keyEnd]
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                keyEnd += 1
            }
            guard keyEnd < walker.count else { return nil }
            index = walker.skipSpace(keyEnd + 1)
            guard index < walker.count, walker[index] == UInt8(ascii: ":") else { return nil }
            let valueStart = walker.skipSpace(index + 1)
            guard let valueEnd = walker.skipValue(valueStart) else { return nil }
            members.append(ObjectMember(keyStart: keyStart, keyEnd: keyEnd, valueStart: valueStart, valueEnd: valueEnd))
            index = walker.skipSpace(valueEnd)
            guard index < walker.count else { return nil }
            if walker[index] == UInt8(ascii: "}") { return index + 1 }
            guard walker[index] == UInt8(ascii: ",") else { return nil }
            index = walker.skipSpace(index + 1)
        }
    }

    /// Writes the object whose members are `members[base...]`, sorted by key, then drops them.
    /// `skip` names the two members left out (the top level's children and `nomore`), nil below it.
    private mutating func writeMembers(_ walker: inout Walker, from base: Int, depth: Int, skip: (String, String)?) -> Bool {
        let input = walker.input
        members[base...].sort { a, b in
            Walker.bytesPrecede(input, a.keyStart, a.keyEnd, b.keyStart, b.keyEnd)
        }
        text.append(UInt8(ascii: "{"))
        var first = true
        var index = base
        while index < members.count {
            let member = members[index]
            index += 1
            if index < members.count, walker.sameKey(member, members[index]) { return false }
            if let skip, walker.equals(member, skip.0) || walker.equals(member, skip.1) {
                continue
            }
            if !first { text.append(UInt8(ascii: ",")) }
            first = false
            text.append(UInt8(ascii: "\""))
            text.append(contentsOf: UnsafeBufferPointer(rebasing: input[member.keyStart..<member.keyEnd]))
            text.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
            guard writeValue(&walker, member.valueStart, member.valueEnd, depth: depth + 1) else { return false }
        }
        text.append(UInt8(ascii: "}"))
        members.removeSubrange(base...)
        return true
    }

    /// Writes the value at `start..<end` (whose end `skipValue` found).
    private mutating func writeValue(_ walker: inout Walker, _ start: Int, _ end: Int, depth: Int) -> Bool {
        guard depth < Self.maximumDepth else { return false }
        switch walker[start] {
        case UInt8(ascii: "{"):
            let base = members.count
            guard collectMembers(&walker, from: start) == end else { return false }
            return writeMembers(&walker, from: base, depth: depth, skip: nil)
        case UInt8(ascii: "["):
            text.append(UInt8(ascii: "["))
            var index = walker.skipSpace(start + 1)
            if index < end, walker[index] == UInt8(ascii: "]") {
                text.append(UInt8(ascii: "]"))
                return index + 1 == end
            }
            while true {
                guard let valueEnd = walker.skipValue(index), writeValue(&walker, index, valueEnd, depth: depth + 1) else { return false }
                index = walker.skipSpace(valueEnd)
                guard index < end else { return false }
                if walker[index] == UInt8(ascii: "]") {
                    text.append(UInt8(ascii: "]"))
                    return index + 1 == end
                }
                guard walker[index] == UInt8(ascii: ",") else { return false }
                text.append(UInt8(ascii: ","))
                index = walker.skipSpace(index + 1)
            }
        case UInt8(ascii: "\""):
            guard walker.canonicalString(start, end) else { return false }
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            guard walker.literal(start, end) else { return false }
        default:
            guard walker.canonicalInteger(start, end) else { return false }
        }
        text.append(contentsOf: UnsafeBufferPointer(rebasing: walker.input[start..<end]))
        return true
    }
}

/// Byte-level checks over one item's bytes.
private struct Walker {
    let input: UnsafeBufferPointer<UInt8>
    var count: Int { input.count }

    subscript(index: Int) -> UInt8 { input[index] }

    func skipSpace(_ start: Int) -> Int {
        var index = start
        while index < input.count {
            switch input[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return index
            }
        }
        return index
    }

    /// The end of the value at `start` (its structure only; its content is checked when written).
    func skipValue(_ start: Int) -> Int? {
        guard start < input.count else { return nil }
        var index = start
        var depth = 0
        repeat {
            guard index < input.count else { return nil }
            let byte = input[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                while true {
                    guard index < input.count else { return nil }
                    let inner = input[index]
                    index += 1
                    if inner == UInt8(ascii: "\"") { break }
                    if inner == UInt8(ascii: "\\") { index += 1 }
                }
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth < 0 { return nil }
            case UInt8(ascii: ","), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09:
                if depth == 0 { return nil }
            default:
                if depth == 0 {
                    // A scalar: up to the next delimiter.
                    while index < input.count {
                        switch input[index] {
                        case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09:
                            return index
                        default: index += 1
                        }
                    }
                    return index
                }
            }
        } while depth > 0
        return index
    }

    /// A string exactly as `JSONEncoder` writes its decoded value.
    func canonicalString(_ start: Int, _ end: Int) -> Bool {
        guard end - start >= 2, input[end - 1] == UInt8(ascii: "\"") else { return false }
        var index = start + 1
        while index < end - 1 {
            let byte = input[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") { return false }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < end - 1 else { return false }
                switch input[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"):
                    index += 2
                case UInt8(ascii: "u"):
                    // `\u00xx` (lowercase hex) for a control character without a short escape.
                    guard index + 5 < end - 1, input[index + 2] == UInt8(ascii: "0"), input[index + 3] == UInt8(ascii: "0"),
                        let high = Self.lowerHex(input[index + 4]), let low = Self.lowerHex(input[index + 5])
                    else { return false }
                    let value = high << 4 | low
                    guard value < 0x20, ![0x08, 0x09, 0x0A, 0x0C, 0x0D].contains(value) else { return false }
                    index += 6
                default: return false
                }
            } else {
                index += 1
            }
        }
        return index == end - 1
    }

    static func lowerHex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// The value of a string without escapes (nil for another value or a string with escapes).
    func plainString(_ start: Int, _ end: Int) -> String? {
        guard end - start >= 2, input[start] == UInt8(ascii: "\""), input[end - 1] == UInt8(ascii: "\"") else { return nil }
        let content = UnsafeBufferPointer(rebasing: input[(start + 1)..<(end - 1)])
        guard !content.contains(UInt8(ascii: "\\")), canonicalString(start, end) else { return nil }
        return String(decoding: content, as: UTF8.self)
    }

    func literal(_ start: Int, _ end: Int) -> Bool {
        let token = UnsafeBufferPointer(rebasing: input[start..<end])
        return token.elementsEqual("true".utf8) || token.elementsEqual("false".utf8) || token.elementsEqual("null".utf8)
    }

    /// An integer as `JSONEncoder` writes an `Int64`: `-`?, no leading zero, no `-0`, within 64 bits.
    func canonicalInteger(_ start: Int, _ end: Int) -> Bool {
        var index = start
        let negative = input[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let digits = end - index
        guard digits >= 1, digits <= 19 else { return false }
        for position in index..<end where !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[position]) { return false }
        if input[index] == UInt8(ascii: "0") { return digits == 1 && !negative }
        if digits == 19 {
            // Same length: within 64 bits when not above the limit.
            let limit = negative ? "9223372036854775808" : "9223372036854775807"
            return !limit.utf8.lexicographicallyPrecedes(UnsafeBufferPointer(rebasing: input[index..<end]))
        }
        return true
    }

    /// Whether a member's key is `key`.
    func equals(_ member: ObjectMember, _ key: String) -> Bool {
        UnsafeBufferPointer(rebasing: input[member.keyStart..<member.keyEnd]).elementsEqual(key.utf8)
    }

    func sameKey(_ a: ObjectMember, _ b: ObjectMember) -> Bool {
        UnsafeBufferPointer(rebasing: input[a.keyStart..<a.keyEnd]).elementsEqual(UnsafeBufferPointer(rebasing: input[b.keyStart..<b.keyEnd]))
    }

    static func bytesPrecede(_ input: UnsafeBufferPointer<UInt8>, _ a: Int, _ aEnd: Int, _ b: Int, _ bEnd: Int) -> Bool {
        UnsafeBufferPointer(rebasing: input[a..<aEnd]).lexicographicallyPrecedes(UnsafeBufferPointer(rebasing: input[b..<bEnd]))
    }
}

/// One member of an object being written: where its key (without quotes) and its value are in the input.
private struct ObjectMember {
    var keyStart: Int
    var keyEnd: Int
    var valueStart: Int
    var valueEnd: Int
}
