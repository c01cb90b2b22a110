import Foundation
import HTTPTypes
import Handlers
import HummingbirdTesting
import NIOPosix
import SyncAPI
import TestSupport
import Testing

/// A phone on a slow link reads a group's answer for longer than the database deadline: the answer must arrive whole.
/// A run of reads writes its answer from inside its snapshot as the client reads it; bounding the whole run by the
/// database deadline cut every such download on PostgreSQL, and the phone, asking again, never finished.
@Suite("Slow group readers", .sharingTheMachine)
struct SlowGroupReaderTests {
    @Test("a group's answer read over several database deadlines arrives whole, both sub-answers 200", arguments: Backend.allCases)
    func slowReaderGetsTheWholeGroup(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live, configure: { $0.databaseDeadline = .seconds(1) }) { client in
            let port = try #require(client.port)
            let api = try await APIClient.signedUp(client, username: "slow", family: "Slow")
            // About 27 MB: more than the kernel's buffers on both ends take, so the server writes the answer only as fast
            // as the client reads it.
            try await SlowReaderTests.putLargeContacts(api, count: 128)
            let token = try #require(api.token)
            let body = #"{"requests":[{"id":"a","method":"GET","url":"/api/v1/ctcsync"},{"id":"b","method":"GET","url":"/api/v1/evtsync"}]}"#
            let fd = try await RawSocket.connect(port: port, receiveBuffer: 65536)
            defer { RawSocket.reset(fd) }
            try await RawSocket.send(
                fd,
                "POST /api/v1/group HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let start = ContinuousClock.now
            // A slow link: at most 64 KiB every 10 ms, so the answer takes seconds to read, several database deadlines.
            let answer = try await RawSocket.readSlowly(fd, until: "\r\n0\r\n\r\n", pause: .milliseconds(10))
            let took = ContinuousClock.now - start
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(60))")
            #expect(took > .seconds(2), "read in \(took): not slower than the database deadline, the test proves nothing")
            #expect(answer.components(separatedBy: #""status":200"#).count - 1 == 2, "both sub-answers, whole")
            #expect(answer.contains(#""id":"c127""#))
        }
    }
}

extension RawSocket {
    /// Reads until `marker` has arrived, at most 64 KiB per read and a pause after each (a slow link); throws when
    /// the connection ends first (a broken answer) or nothing arrives for 60 s (a ceiling for a loaded machine).
    static func readSlowly(_ fd: Int32, until marker: String, pause: Duration) async throws -> String {
        var received: [UInt8] = []
        let tail = Array(marker.utf8)
        while !received.suffix(tail.count).elementsEqual(tail) {
            let chunk = try await NIOThreadPool.singleton.runIfActive {
                var timeout = timeval(tv_sec: 60, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = recv(fd, &buffer, buffer.count, 0)
                return n > 0 ? Array(buffer[0..<n]) : []
            }
            guard !chunk.isEmpty else {
                throw TestFailure("the answer ended before \(marker.debugDescription) after \(received.count) bytes")
            }
            received += chunk
            try await Task.sleep(for: pause)
        }
        return String(decoding: received, as: UTF8.self)
    }
}
