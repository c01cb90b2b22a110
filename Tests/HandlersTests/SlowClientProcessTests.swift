import Foundation
import NIOPosix
import SyncAPI
import TestSupport
import Testing

/// Issue 16, item 6 (security audit H4) against the real binary: a body trickled a byte at a time is cut at its
/// whole-body deadline, and one address cannot hold more than its share of connections.
@Suite("Slow and greedy clients", .sharingTheMachine)
struct SlowClientProcessTests {
    @Test("a body trickled a byte every 2 s is cut at its whole-body deadline (10 s for 100 bytes), not held forever")
    func trickle() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start(["--database", "sqlite:\(folder)/db.sqlite", "--body-read-timeout", "30"])
        defer { server.killAndReap() }
        let fd = try await RawSocket.connect(port: server.port)
        defer { close(fd) }
        let start = ContinuousClock.now
        try await RawSocket.send(fd, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        // Each byte comes well within the 30 s stall timeout: only the whole-body deadline can end this.
        var closed = false
        for _ in 0..<20 where !closed {
            try await Task.sleep(for: .seconds(2))
            let sent = (try? await RawSocket.send(fd, " ")) != nil
            if !sent {
                closed = true
            } else {
                closed = try await RawSocket.isClosed(fd)
            }
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        print("trickled body: cut after \(seconds) s (whole-body deadline 10 s, stall timeout 30 s)")
        #expect(closed && seconds < 20, "a trickled body held the connection \(seconds) s")
    }

    @Test("a body that stops is cut at the body read timeout; requests that came whole keep their connection past it")
    func stalledBodyAndWholeRequests() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start(["--database", "sqlite:\(folder)/db.sqlite", "--body-read-timeout", "2"])
        defer { server.killAndReap() }
        // The timers of an open request are set once its read is complete (a request whose end came with its head
        // sets none): a head and part of its body, then nothing, is still cut at the stall timeout.
        let stalled = try await RawSocket.connect(port: server.port)
        defer { close(stalled) }
        let start = ContinuousClock.now
        try await RawSocket.send(stalled, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        let cut = try await RawSocket.isClosed(stalled, waiting: .seconds(25))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        // Not before the 2 s, and well before the default 30 s that would mean the option was ignored.
        #expect(cut && seconds >= 1.5 && seconds < 20, "a stalled body was cut after \(seconds) s (body read timeout 2 s)")
        // Whole requests on a keep-alive connection, 3 s apart (past the body read timeout): none is cut.
        let alive = try await RawSocket.connect(port: server.port)
        defer { close(alive) }
        for _ in 0..<2 {
            try await RawSocket.send(alive, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try await RawSocket.read(alive, until: "\"ok\"")
            #expect(try await !RawSocket.isClosed(alive, waiting: .seconds(3)))
        }
    }

    @Test("a body answered early (401 to an upload of 20 MB) is read for 2 s at most, then the connection is closed")
    func unreadBody() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start(["--database", "sqlite:\(folder)/db.sqlite"])
        defer { server.killAndReap() }
        // 160 KiB/s: fast enough for the whole-body deadline of 20 MB (over 40 minutes), and never done.
        let output = try await TestPostgres.run([
            "python3", "-c",
            """
            import socket, time
            s = socket.create_connection(("127.0.0.1", \(server.port)))
            s.sendall(b"POST /api/v1/media HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: image/jpeg\\r\\nContent-Length: 20000000\\r\\n\\r\\n")
            s.setblocking(False)
            start, got, closed = time.time(), b"", False
            while time.time() - start < 30 and not closed:
                try:
                    s.send(b"x" * 16384)
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
                try:
                    data = s.recv(65536)
                    got += data
                    closed = closed or data == b""
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
                time.sleep(0.1)
            print(round(time.time() - start, 2), got.split(b"\\r\\n")[0].decode())
            """,
        ])
        print("unread body: \(output)")
        let parts = output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1)
        let seconds = Double(parts.first ?? "") ?? 99
        #expect(parts.last?.hasPrefix("HTTP/1.1 401") == true, "the client did not read its answer: \(output)")
        // 2 s by design; the wrong outcome is a body read to the client's 30 s end.
        #expect(seconds < 20, "an answered request's body was read for \(seconds) s")
    }

    @Test("past --max-connections-per-address a new connection of that address is closed at once")
    func perAddressCap() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start(["--database", "sqlite:\(folder)/db.sqlite", "--max-connections-per-address", "3"])
        defer { server.killAndReap() }
        var held = try await RawSocket.answeredConnections(3, port: server.port)
        defer { for fd in held { close(fd) } }
        let fourth = try await RawSocket.connect(port: server.port)
        defer { close(fourth) }
        try? await RawSocket.send(fourth, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try await RawSocket.isClosed(fourth, waiting: .seconds(3))
        #expect(refused, "a fourth connection of the address was served")
        close(held.removeLast())
        #expect(try await Curl.servedAgain(port: server.port))
    }
}

extension Curl {
    /// Whether `/health` is served within a minute. Once the server has seen a held connection close, a new one is
    /// served; a loaded machine may take seconds to notice (a clean-clone CI run with builds beside it failed 50 tries
    /// 100 ms apart): what is wrong is a place never given back, so the ceiling is a minute.
    static func servedAgain(port: Int) async throws -> Bool {
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end {
            if (try? await Curl.call(["-m", "10", "http://127.0.0.1:\(port)/health"]))?.status == 200 { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}

extension RawSocket {
    /// `count` connections the server has certainly accepted and counted: each answered once, and kept alive.
    static func answeredConnections(_ count: Int, port: Int) async throws -> [Int32] {
        var held: [Int32] = []
        for _ in 0..<count {
            let fd = try await connect(port: port)
            held.append(fd)
            try await send(fd, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try await read(fd, until: "\"ok\"")
        }
        return held
    }

    /// True when the peer closed the connection (EOF or reset) within `waiting`, reading whatever arrives.
    static func isClosed(_ fd: Int32, waiting: Duration = .milliseconds(100)) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive {
            var timeout = timeval(tv_sec: Int(waiting.components.seconds), tv_usec: Int(waiting.components.attoseconds / 1_000_000_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n == 0 { return true }
                if n < 0 { return errno == ECONNRESET }
            }
        }
    }
}
