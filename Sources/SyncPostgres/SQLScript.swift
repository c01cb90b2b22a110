import Foundation
import SyncAPI

/// Splits a migration file into the statements PostgreSQL's extended protocol takes one at a time.
///
/// It splits at `;` only outside quotes, quoted names, dollar-quoted bodies (`$$ … $$`, `$tag$ … $tag$`, as in a
/// function) and comments, so a semicolon inside a string or a function body never cuts a statement. Comments are
/// dropped.
enum SQLScript {
    static func statements(of sql: String) -> [String] {
        let chars = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var i = 0
        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        /// Copies up to and including the next `close` from `start`; returns the index after it.
        func copy(through close: [Unicode.Scalar], from start: Int) -> Int {
            var j = start
            while j < chars.count {
                if j + close.count <= chars.count, Array(chars[j..<j + close.count]) == close {
                    current.append(contentsOf: close)
                    return j + close.count
                }
                current.append(chars[j])
                j += 1
            }
            return j
        }
        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            switch c {
            case "-" where next == "-":
                while i < chars.count, chars[i] != "\n" { i += 1 }
            case "/" where next == "*":
                i += 2
                while i < chars.count, !(chars[i] == "*" && i + 1 < chars.count && chars[i + 1] == "/") { i += 1 }
                i += 2
            case "'", "\"":
                // A doubled quote inside closes and reopens: the same as copying two quoted runs.
                current.append(c)
                i = copy(through: [c], from: i + 1)
            case "$":
                var j = i + 1
                while j < chars.count, chars[j] == "_" || chars[j].properties.isAlphabetic || ("0"..."9").contains(chars[j]) { j += 1 }
                if j < chars.count, chars[j] == "$", !(i > 0 && chars[i - 1].properties.isAlphabetic) {
                    let tag = Array(chars[i...j])
                    current.append(contentsOf: tag)
                    i = copy(through: tag, from: j + 1)
                } else {
                    current.append(c)
                    i += 1
                }
            case ";":
                flush()
                i += 1
            default:
                current.append(c)
                i += 1
            }
        }
        flush()
        return statements
    }
}
