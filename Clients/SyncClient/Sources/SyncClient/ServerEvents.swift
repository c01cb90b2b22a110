/// One server-sent event of `GET /changes` (protocol §9).
public struct ServerEvent: Sendable, Equatable {
    public var event = "message"
    public var data = ""
    public var id: String?
    public var retryMilliseconds: Int?
}

/// Parses `text/event-stream` bytes into events (the WHATWG rules the SDK needs: `event`, `data`, `id`, `retry`,
/// comment lines, blank line ends an event; CR, LF or CRLF line ends).
struct ServerEventParser {
    private var buffer: [UInt8] = []
    private var current = ServerEvent()
    private var hasData = false

    /// Feeds bytes; returns the events they complete.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerEvent] {
        buffer.append(contentsOf: bytes)
        var events: [ServerEvent] = []
        while let end = buffer.firstIndex(where: { $0 == 10 || $0 == 13 }) {
            // A CR at the very end may be the first half of a CRLF: wait for more.
            if buffer[end] == 13, end == buffer.count - 1 { break }
            let line = String(decoding: buffer[..<end], as: UTF8.self)
            var next = end + 1
            if buffer[end] == 13, next < buffer.count, buffer[next] == 10 { next += 1 }
            buffer.removeSubrange(..<next)
            if let event = take(line) { events.append(event) }
        }
        return events
    }

    private mutating func take(_ line: String) -> ServerEvent? {
        if line.isEmpty {
            defer {
                current = ServerEvent(id: current.id)
                hasData = false
            }
            return hasData ? current : nil
        }
        if line.hasPrefix(":") { return nil }
        let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let field = String(parts[0])
        var value = parts.count > 1 ? String(parts[1]) : ""
        if value.hasPrefix(" ") { value.removeFirst() }
        switch field {
        case "event": current.event = value
        case "data":
            current.data = hasData ? current.data + "\n" + value : value
            hasData = true
        case "id": current.id = value
        case "retry": current.retryMilliseconds = Int(value)
        default: break
        }
        return nil
    }
}
