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
/// event, CR, LF or CRLF line ends, bytes split anywhere (even inside a UTF-8 sequence). Bounded: a line, or an
/// event's `event` and `data`, longer than `maximumEventBytes` makes `feed` throw, so that a stream that never ends
/// its line cannot fill memory (the SDK then drops the connection and opens it again after a backoff).
public struct ServerEventParser: Sendable {
    private var buffer: [UInt8] = []
    /// Bytes at the start of `buffer` already looked at: they hold no line end.
    private var scanned = 0
    private var current = ServerEvent()
    private var lastID: String?
    private var hasData = false
    private var skippedBOM = false
    /// The last line ended with a CR: a LF right after it belongs to the same line end.
    private var afterCR = false
    /// The last `retry:` hint, in milliseconds.
    public private(set) var retry: Int?
    /// Most bytes of one line, and of one event's `event` and `data` together.
    public let maximumEventBytes: Int

    /// A parser whose lines and events may take at most `maximumEventBytes` (1 MiB by default; the server's events
    /// are a few hundred bytes).
    public init(maximumEventBytes: Int = 1024 * 1024) {
        self.maximumEventBytes = maximumEventBytes
    }

    /// Feeds bytes; returns the events they complete. Throws `answer_too_large` (and forgets what it held) when a
    /// line or an event goes past `maximumEventBytes`; the events the bytes completed before it are lost with it.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [ServerEvent] {
        buffer.append(contentsOf: bytes)
        if !skippedBOM, buffer.count >= 3 {
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) {
                buffer.removeFirst(3)
                scanned = 0
            }
            skippedBOM = true
        }
        var events: [ServerEvent] = []
        var start = 0
        var index = scanned
        while index < buffer.count {
            let byte = buffer[index]
            if byte == 10, afterCR {
                // The LF of a CRLF whose CR already ended the line.
                afterCR = false
                start = index + 1
            } else if byte == 10 || byte == 13 {
                afterCR = byte == 13
                if index - start > maximumEventBytes { throw overflow("a line") }
                let line = String(decoding: buffer[start..<index], as: UTF8.self)
                start = index + 1
                if let event = take(line) { events.append(event) }
                if current.event.utf8.count + current.data.utf8.count > maximumEventBytes { throw overflow("an event") }
            } else {
                afterCR = false
            }
            index += 1
        }
        buffer.removeSubrange(..<start)
        scanned = buffer.count
        if buffer.count > maximumEventBytes { throw overflow("a line") }
        return events
    }

    /// Forgets the line and event being read; the error `feed` throws.
    private mutating func overflow(_ what: String) -> SyncClientError {
        buffer = []
        scanned = 0
        current = ServerEvent()
        hasData = false
        return SyncClientError.answerTooLarge(status: 200, limit: maximumEventBytes, what: "\(what) of the event stream")
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
            // Appended in place: an event of many data lines costs no copy of what it holds already.
            if hasData { current.data.append("\n") }
            current.data.append(contentsOf: value)
            hasData = true
        case "id" where !value.contains("\0"): lastID = String(value)
        case "retry": if let milliseconds = Int(value), value.allSatisfy(\.isASCII) { retry = milliseconds }
        default: break
        }
        return nil
    }
}
