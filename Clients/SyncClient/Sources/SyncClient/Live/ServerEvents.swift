/// One server-sent event of `GET /changes` (protocol §9).
public struct ServerEvent: Sendable, Equatable {
    public var event = "message"
    public var data = ""
    /// The last event id seen (sent back as `Last-Event-ID` on reconnection).
    public var id: String?

    public init(event: String = "message", data: String = "", id: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// Parses `text/event-stream` bytes into events, following the WHATWG rules the SDK needs: `event`, `data` (joined
/// by newlines), `id` (kept across events), `retry` (the reconnection hint), comment lines, a blank line ends an
/// event, CR, LF or CRLF line ends, bytes split anywhere (even inside a UTF-8 sequence).
public struct ServerEventParser: Sendable {
    private var buffer: [UInt8] = []
    private var current = ServerEvent()
    private var lastID: String?
    private var hasData = false
    private var skippedBOM = false
    /// The last line ended with a CR: a LF right after it belongs to the same line end.
    private var afterCR = false
    /// The last `retry:` hint, in milliseconds.
    public private(set) var retry: Int?

    public init() {}

    /// Feeds bytes; returns the events they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerEvent] {
        buffer.append(contentsOf: bytes)
        if !skippedBOM, buffer.count >= 3 {
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { buffer.removeFirst(3) }
            skippedBOM = true
        }
        var events: [ServerEvent] = []
        var start = 0
        var index = 0
        while index < buffer.count {
            let byte = buffer[index]
            if byte == 10, afterCR {
                // The LF of a CRLF whose CR already ended the line.
                afterCR = false
                start = index + 1
            } else if byte == 10 || byte == 13 {
                afterCR = byte == 13
                let line = String(decoding: buffer[start..<index], as: UTF8.self)
                start = index + 1
                if let event = take(line) { events.append(event) }
            } else {
                afterCR = false
            }
            index += 1
        }
        buffer.removeSubrange(..<start)
        return events
    }

    private mutating func take(_ line: String) -> ServerEvent? {
        if line.isEmpty {
            defer {
                current = ServerEvent()
                hasData = false
            }
            guard hasData else { return nil }
            current.id = lastID
            return current
        }
        if line.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = Substring(line)
            value = ""
        }
        switch field {
        case "event": current.event = String(value)
        case "data":
            current.data = hasData ? current.data + "\n" + value : String(value)
            hasData = true
        case "id" where !value.contains("\0"): lastID = String(value)
        case "retry": if let milliseconds = Int(value), value.allSatisfy(\.isASCII) { retry = milliseconds }
        default: break
        }
        return nil
    }
}
