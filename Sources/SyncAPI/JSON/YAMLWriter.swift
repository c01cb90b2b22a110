/// Writes a JSON value as block-style YAML, members in document order: how `syncapi model openapi --yaml` writes
/// `docs/api/openapi.yaml` so that a person can read and diff it. Strings that YAML could read as something else are
/// written double-quoted with JSON escapes (a subset of YAML's), so every output reads back as the same JSON.
public enum YAMLWriter {
    public static func encode(_ value: JSONValue) -> String {
        var out = ""
        write(value, indent: 0, into: &out, inline: false)
        return out
    }

    private static func write(_ value: JSONValue, indent: Int, into out: inout String, inline: Bool) {
        let pad = String(repeating: " ", count: indent)
        switch value {
        case .object(let members) where !members.isEmpty:
            if inline { out += "\n" }
            for (key, member) in members {
                out += pad + scalar(key) + ":"
                writeMember(member, indent: indent, into: &out)
            }
        case .array(let elements) where !elements.isEmpty:
            if inline { out += "\n" }
            for element in elements {
                out += pad + "-"
                switch element {
                case .object(let members) where !members.isEmpty:
                    // The first member on the dash's line, the others aligned under it.
                    var first = true
                    for (key, member) in members {
                        out += (first ? " " : pad + "  ") + scalar(key) + ":"
                        writeMember(member, indent: indent + 2, into: &out)
                        first = false
                    }
                case .array(let inner) where !inner.isEmpty:
                    write(element, indent: indent + 2, into: &out, inline: true)
                default:
                    out += " " + leaf(element, indent: indent + 2) + "\n"
                }
            }
        default:
            out += (inline ? " " : pad) + leaf(value, indent: indent) + "\n"
        }
    }

    private static func writeMember(_ member: JSONValue, indent: Int, into out: inout String) {
        switch member {
        case .object(let m) where !m.isEmpty: write(member, indent: indent + 2, into: &out, inline: true)
        case .array(let a) where !a.isEmpty: write(member, indent: indent, into: &out, inline: true)
        default: out += " " + leaf(member, indent: indent + 2) + "\n"
        }
    }

    private static func leaf(_ value: JSONValue, indent: Int) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .number: JSONWriter.encode(value)
        case .string(let s): block(s, indent: indent) ?? scalar(s)
        case .array: "[]"
        case .object: "{}"
        }
    }

    /// Text of several lines as a literal block (`|`), read back byte for byte: printable lines, none starting with a
    /// space or ending with one, the text ending with at most one line break.
    static func block(_ s: String, indent: Int) -> String? {
        guard s.contains("\n"), !s.hasSuffix("\n\n"), !s.hasPrefix("\n") else { return nil }
        let lines = s.split(separator: "\n", omittingEmptySubsequences: false)
        let body = s.hasSuffix("\n") ? lines.dropLast() : lines[...]
        let printable = body.allSatisfy { line in
            !line.hasPrefix(" ") && !line.hasSuffix(" ") && line.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
        }
        guard printable else { return nil }
        let pad = String(repeating: " ", count: indent + 2)
        return (s.hasSuffix("\n") ? "|" : "|-") + body.map { $0.isEmpty ? "\n" : "\n" + pad + $0 }.joined()
    }

    /// A plain scalar when YAML reads it back as this same string, else a double-quoted one.
    static func scalar(_ s: String) -> String {
        guard let first = s.unicodeScalars.first, let last = s.unicodeScalars.last else { return "''" }
        let plainStart = first.properties.isAlphabetic || first == "_" || first == "/" || first == "$" || first == "("
        let safe = s.unicodeScalars.allSatisfy { c in
            c.value >= 0x20 && c.value < 0x7F && !"#:\"'{}[],&*!|>%@`\\".unicodeScalars.contains(c)
        }
        let reserved: Set<String> = ["true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"]
        if plainStart, safe, last != " ", !reserved.contains(s.lowercased()), !s.contains(": "), !s.contains(" #") {
            return s
        }
        return JSONWriter.encode(.string(s))
    }
}
