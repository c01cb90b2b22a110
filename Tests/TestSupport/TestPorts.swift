import Foundation

/// Ports for the fixtures that listen on a port they choose (PostgreSQL, a standby, PgBouncer). They come from below
/// the kernel's range for outgoing connections: a fixture stopped and started again on its port (a PostgreSQL restart)
/// must not find it taken by a client's connection in between, which a port in that range can be at any time.
public enum TestPorts {
    /// The first port the kernel hands to outgoing connections (`ip_local_port_range`; Linux's default 32768).
    static let ephemeralStart: Int = {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
            let first = text.split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) })
        else { return 32_768 }
        return first
    }()

    /// A port to try: random below the outgoing range (callers try again when it is taken).
    public static func candidate() -> Int {
        let upper = max(ephemeralStart, 12_000)
        return Int.random(in: 10_000..<upper)
    }
}
