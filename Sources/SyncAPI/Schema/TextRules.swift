/// The rules every client string obeys (protocol §2): lengths count Unicode scalar values, never grapheme
/// clusters (so combining marks cannot slip past a limit), and U+0000 is refused everywhere (PostgreSQL cannot
/// store it in text, and no app means it).
public enum TextRules {
    /// Throws 400 `invalid_field` naming `field` when `text` holds U+0000 or more than `maxLength` scalars.
    public static func check(_ text: String, _ field: String, maxLength: Int) throws(SyncError) {
        var count = 0
        for scalar in text.unicodeScalars {
            guard scalar.value != 0 else { throw SyncError.invalidField(field, "\(field) must not contain U+0000.") }
            count += 1
        }
        guard count <= maxLength else { throw SyncError.invalidField(field, "\(field) is longer than \(maxLength) characters.") }
    }

    /// The length of `text` in Unicode scalar values.
    public static func length(_ text: String) -> Int { text.unicodeScalars.count }
}
