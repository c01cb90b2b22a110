import HTTPTypes
import Handlers
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Security audit 651e0ee H3: readers that download just fast enough to pass the stall limit kept every snapshot
/// place of an instance for as long as they read, and every other family's group and first sync answered 429. Over
/// real HTTP on both backends: slow readers that hold every place give one up to another family's group.
@Suite("Slow readers", .sharingTheMachine)
struct SlowReaderTests {
    @Test(
        "two downloads of 27 MB read through a 4 KiB window hold every place; another family's group still answers 200", arguments: Backend.allCases)
    func slowReadersGiveWay(backend: Backend) async throws {
        try await TestApp.run(
            backend, mode: .live,
            configure: {
                $0.maxSnapshotAnswersPerInstance = 2
                // Every holder is below 1 TB/s from its first instant: which one is slow does not depend on this machine.
                $0.snapshotAnswerPace = .init(minimumRate: 1 << 40, grace: .zero)
            }
        ) { client in
            let port = try #require(client.port)
            let reader = try await APIClient.signedUp(client, username: "slow", family: "Slow")
            // About 27 MB: more than the kernel's buffers on both ends take while the client reads nothing.
            try await Self.putLargeContacts(reader, count: 128)
            let other = try await APIClient.signedUp(client, username: "other", family: "Other")
            let token = try #require(reader.token)
            var held: [Int32] = []
            defer { for fd in held { RawSocket.reset(fd) } }
            for _ in 0..<2 {
                let fd = try await RawSocket.connect(port: port, receiveBuffer: 4096)
                held.append(fd)
                try await RawSocket.send(fd, "GET /api/v1/ctcsync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
                let head = try await RawSocket.read(fd, until: "\r\n\r\n")
                #expect(head.hasPrefix("HTTP/1.1 200"), "\(head.prefix(40))")
            }
            // Both places are held: the readers read nothing more.
            #expect(try await Self.gauge(other, "syncapi_snapshot_answers") == 2)
            let group = try await other.call(
                .post, "/api/v1/group",
                body: #"{"requests":[{"id":"a","method":"GET","url":"/api/v1/ctcsync"},{"id":"b","method":"GET","url":"/api/v1/evtsync"}]}"#)
            #expect(group.status == .ok, "\(group.body.prefix(200))")
            #expect(try await Self.gauge(other, "syncapi_snapshot_answers_cut") == 1)
        }
    }

    /// Puts `count` contacts of the largest notes and emails (214 KB each as JSON, U+0001 written as 6 bytes).
    static func putLargeContacts(_ api: APIClient, count: Int) async throws {
        let control = #"\u0001"#
        let notes = String(repeating: control, count: 10_000)
        let emails = Array(repeating: "\"" + String(repeating: control, count: 256) + "\"", count: 100).joined(separator: ",")
        for n in 0..<count {
            let put = try await api.call(.put, "/api/v1/contacts/c\(n)", body: #"{"firstName":"C","notes":"\#(notes)","emails":[\#(emails)]}"#)
            #expect(put.status == .created || put.status == .ok, "\(put.body.prefix(200))")
        }
    }

    /// The value of a gauge in `/metrics`.
    static func gauge(_ api: APIClient, _ name: String) async throws -> Double? {
        let metrics = try await api.call(.get, "/metrics").body
        for line in metrics.split(separator: "\n") where line.hasPrefix("\(name) ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }
}
