import Foundation

@testable import SyncClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A hostile HTTP server on 127.0.0.1 for `URLSessionTransport`'s tests: every request is answered 200 with a body
/// that never ends (no `Content-Length`, bytes until the client closes the connection, or `safetyBytes`), at the pace
/// of a fast network (64 KiB a millisecond). Each connection's end is reported on `ended` with the bytes written to
/// it, so a test waits for that event. The pace is the point: Linux's URLSession carries out a cancel only once its
/// socket has nothing more to read, which over an unpaced loopback never happens (seen: 2 GiB read after the cancel).
final class EndlessHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    /// The bytes written to each connection, as each ends.
    let ended: AsyncStream<Int>
    private let report: AsyncStream<Int>.Continuation
    /// A connection never gets more than this: a ceiling (about a minute at the pace), not a measure. A connection
    /// that reaches it was never closed by the client, which fails the test.
    static let safetyBytes = 4 * 1024 * 1024 * 1024

    /// Connections accepted so far.
    var accepted: Int { acceptedCount.withLock { $0 } }
    private let acceptedCount = Locked(0)

    /// `body`: the whole answer instead of an endless one (`Content-Length`, then the connection closes; with
    /// `keepAlive`, the connection stays open for the client's next request, answered the same way).
    init(body: Data? = nil, keepAlive: Bool = false) throws {
        (ended, report) = AsyncStream.makeStream(of: Int.self)
        #if canImport(Glibc)
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let listening = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard listening >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listening, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = listening
        let report = report
        let acceptedCount = acceptedCount
        Thread.detachNewThread {
            while true {
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else { return }
                acceptedCount.withLock { $0 += 1 }
                Thread.detachNewThread { report.yield(Self.answer(connection, body: body, keepAlive: keepAlive)) }
            }
        }
    }

    /// Stops accepting connections.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = closeDescriptor(listener)
        report.finish()
    }

    /// Reads the request's head, then writes the endless answer: the bytes written when the client went away. With
    /// `keepAlive`, answers request after request until the client closes the connection.
    private static func answer(_ connection: Int32, body: Data?, keepAlive: Bool) -> Int {
        defer { _ = closeDescriptor(connection) }
        #if canImport(Darwin)
        var on: Int32 = 1
        setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        guard keepAlive, let body else { return answerOnce(connection, body: body) }
        var written = 0
        while true {
            guard readHead(connection) else { return written }
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            guard write(connection, Array(head.utf8) + Array(body)) else { return written }
            written += body.count
        }
    }

    /// Reads one request, its head and its body (`Content-Length` bytes, skipped: the answer does not depend on it);
    /// false once the client has gone away.
    private static func readHead(_ connection: Int32) -> Bool {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard read(connection, &byte, 1) == 1 else { return false }
            head.append(byte)
        }
        let lines = String(decoding: head, as: UTF8.self).lowercased().split(separator: "\r\n")
        var left = lines.first { $0.hasPrefix("content-length:") }.flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
        while left > 0 {
            guard read(connection, &byte, 1) == 1 else { return false }
            left -= 1
        }
        return true
    }

    private static func answerOnce(_ connection: Int32, body: Data?) -> Int {
        var head: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 4096)
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            let count = read(connection, &piece, piece.count)
            guard count > 0 else { return 0 }
            head += piece[..<count]
            // A request body after the head is not read: the answer does not depend on it.
            if let end = head.firstRange(of: [13, 10, 13, 10]) { head = Array(head[..<end.upperBound]) }
        }
        if let body {
            let whole = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Answer: whole\r\nContent-Length: \(body.count)\r\n"
            return write(connection, Array("\(whole)Connection: close\r\n\r\n".utf8) + Array(body)) ? body.count : 0
        }
        let start = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n".utf8)
        guard write(connection, start) else { return 0 }
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
        var written = 0
        while written < safetyBytes, write(connection, chunk) {
            written += chunk.count
            // The pace, not a wait: it leaves the client's socket dry between chunks, so that its cancel is carried out.
            usleep(1000)
        }
        return written
    }

    /// Writes all of `bytes`; false once the client has gone away.
    private static func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            #else
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
            #endif
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }
}

/// `close(2)`, which a method named `close` would otherwise shadow.
private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
