import Foundation
import NIOPosix
import TestSupport

/// A server-sent event stream read as it arrives, over a socket of its own: a test waits for the event it needs
/// (`next(where:)`), then acts, then waits for the next one. Reads block on NIO's blocking pool, never on the
/// cooperative pool; a read that gets nothing for `ceiling` fails the test (a generous ceiling, not a measure).
final class EventStreamReader: @unchecked Sendable {
    /// One event: its `event:` name (`message` when absent) and its `data:` line.
    struct Event: Equatable, CustomStringConvertible {
        let name: String
        let data: String
        var description: String { "\(name): \(data)" }
    }

    private let fd: Int32
    /// Bytes read and not yet parsed (after the head: the chunked body's raw bytes).
    private var raw: [UInt8] = []
    /// The de-chunked body not yet split into events.
    private var text = ""
    private var headRead = false
    /// The last chunk (size 0) was read: the answer is complete (the connection may stay open).
    private var ended = false
    /// The answer's status line.
    private(set) var status = ""
    /// Every event parsed so far, in order.
    private(set) var events: [Event] = []
    private var consumed = 0

    /// Opens `GET path` with `token` on `port`.
    init(port: Int, path: String, token: String?, ceiling: Int = 120) throws {
        fd = try OperatorTests.connect(port: port)
        var timeout = timeval(tv_sec: ceiling, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request =
            "GET \(path) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
            + (token.map { "Authorization: Bearer \($0)\r\n" } ?? "") + "\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
    }

    deinit { close(fd) }

    /// Closes the connection (a client that goes away).
    func disconnect() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Returns the events from the last call's on, up to and including the first that satisfies `predicate`; throws
    /// when the stream ends (or stays silent past the ceiling) first.
    func next(where predicate: @escaping @Sendable (Event) -> Bool) async throws -> [Event] {
        try await NIOThreadPool.singleton.runIfActive { try self.readUntil(predicate) }
    }

    /// Reads until the stream ends; returns the events not yet returned.
    func rest() async throws -> [Event] {
        try await NIOThreadPool.singleton.runIfActive {
            while try self.readMore() {}
            defer { self.consumed = self.events.count }
            return Array(self.events[self.consumed...])
        }
    }

    private func readUntil(_ predicate: (Event) -> Bool) throws -> [Event] {
        while true {
            if let index = events[consumed...].firstIndex(where: predicate) {
                defer { consumed = index + 1 }
                return Array(events[consumed...index])
            }
            guard try readMore() else {
                throw TestFailure("the stream ended before the event; got \(events[consumed...]) (status \(status))")
            }
        }
    }

    /// Reads once; false at the end of the stream.
    private func readMore() throws -> Bool {
        guard !ended else { return false }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else {
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw TestFailure("no event within the ceiling; got \(events[consumed...]) after \(events.count) (status \(status))")
            }
            return false
        }
        raw += buffer[0..<n]
        parse()
        return true
    }

    private func parse() {
        if !headRead {
            guard let end = raw.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: raw[..<end.lowerBound], as: UTF8.self)
            status = head.components(separatedBy: "\r\n").first ?? ""
            raw.removeSubrange(..<end.upperBound)
            headRead = true
        }
        // Chunked transfer encoding: a hex size line, the bytes, CRLF.
        while let line = raw.firstRange(of: Array("\r\n".utf8)) {
            let size = Int(String(decoding: raw[..<line.lowerBound], as: UTF8.self), radix: 16) ?? 0
            if size == 0 {
                ended = true
                break
            }
            guard raw.count >= line.upperBound + size + 2 else { break }
            text += String(decoding: raw[line.upperBound..<(line.upperBound + size)], as: UTF8.self)
            raw.removeSubrange(..<(line.upperBound + size + 2))
        }
        while let end = text.range(of: "\n\n") {
            let block = text[..<end.lowerBound]
            text.removeSubrange(..<end.upperBound)
            var name = "message"
            var data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            if let data { events.append(Event(name: name, data: data)) }
        }
    }
}
