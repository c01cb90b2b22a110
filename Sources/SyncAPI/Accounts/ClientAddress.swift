/// Client addresses as the throttles count them (protocol §1, §8): one IPv4 address, or one IPv6 /64 (what one
/// subscriber is usually given, so rotating addresses within it is one client), IPv4-mapped IPv6 as IPv4.
public enum ClientAddress {
    /// The address as written by a dual-stack listener or a proxy, made canonical for comparison: `::ffff:a.b.c.d`
    /// is `a.b.c.d`, IPv6 is lowercase and fully expanded; anything else passes through.
    public static func canonical(_ address: String) -> String {
        guard let groups = ipv6Groups(address) else { return address }
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            return "\(groups[6] >> 8).\(groups[6] & 0xFF).\(groups[7] >> 8).\(groups[7] & 0xFF)"
        }
        return groups.map { String($0, radix: 16) }.joined(separator: ":")
    }

    /// The throttling key of an address: IPv4 whole, IPv6 by its /64.
    public static func key(_ address: String) -> String {
        guard let groups = ipv6Groups(address) else { return address }
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF { return canonical(address) }
        return groups[0..<4].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// The eight 16-bit groups of an IPv6 address (with an optional embedded IPv4 tail and zone), or nil.
    public static func ipv6Groups(_ text: String) -> [UInt16]? {
        var address = Substring(text)
        if address.hasPrefix("["), address.hasSuffix("]") { address = address.dropFirst().dropLast() }
        if let zone = address.firstIndex(of: "%") { address = address[..<zone] }
        guard address.contains(":"), address.utf8.count <= 45 else { return nil }
        var tail: [UInt16] = []
        if let lastColon = address.lastIndex(of: ":"), address[address.index(after: lastColon)...].contains(".") {
            let v4 = address[address.index(after: lastColon)...].split(separator: ".", omittingEmptySubsequences: false)
            guard v4.count == 4 else { return nil }
            let bytes = v4.compactMap { $0.count <= 3 ? UInt16($0) : nil }.filter { $0 <= 255 }
            guard bytes.count == 4 else { return nil }
            tail = [bytes[0] << 8 | bytes[1], bytes[2] << 8 | bytes[3]]
            address = address[...lastColon]
            if !address.hasSuffix("::") { address = address.dropLast() }
        }
        func parse(_ part: Substring) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var out: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                out.append(value)
            }
            return out
        }
        // At most one `::`, which stands for the missing zero groups.
        let bytes = Array(address.utf8)
        let gaps = bytes.indices.dropLast().filter { bytes[$0] == UInt8(ascii: ":") && bytes[$0 + 1] == UInt8(ascii: ":") }
        switch gaps.count {
        case 0:
            guard let all = parse(address), all.count + tail.count == 8 else { return nil }
            return all + tail
        case 1:
            let gap = address.utf8.index(address.startIndex, offsetBy: gaps[0])
            let afterGap = address.utf8.index(gap, offsetBy: 2)
            guard let head = parse(address[..<gap]), let rest = parse(address[afterGap...]) else { return nil }
            let known = head.count + rest.count + tail.count
            guard known < 8 else { return nil }
            return head + Array(repeating: 0, count: 8 - known) + rest + tail
        default:
            return nil
        }
    }
}
