/// The one check behind item ids, usernames and dates of sync: a length and ASCII letters, digits and some punctuation.
enum ASCIIToken {
    /// True when `text` has `length` bytes, each an ASCII letter, a digit or one of `punctuation`.
    static func matches(_ text: String, length: ClosedRange<Int>, punctuation: String) -> Bool {
        let utf8 = text.utf8
        guard length.contains(utf8.count) else { return false }
        let extra = punctuation.utf8
        return utf8.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || extra.contains(b)
        }
    }
}
