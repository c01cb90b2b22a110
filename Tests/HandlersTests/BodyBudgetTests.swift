import HTTPTypes
import Handlers
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Security audit 651e0ee: 300 connections each trickling a declared 1 MiB body held 336 MiB of the server's memory.
/// The bytes of bodies an instance reads at once are bounded: a body takes its place before its first byte, and past
/// the bound a request is answered 503 at once; a body given up gives its place back.
@Suite("Request body memory", .sharingTheMachine)
struct BodyBudgetTests {
    @Test("a body that does not fit the instance's body memory is answered 503 at once; its place comes back", arguments: Backend.allCases)
    func bodiesBounded(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live, configure: { $0.bodyMemoryBytes = 100_000 }) { client in
            let port = try #require(client.port)
            let api = try await APIClient.signedUp(client)
            let head = "PUT /api/v1/contacts/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"
            // A body of 60,000 declared bytes, one sent: it holds its place while the server waits for the rest.
            let first = try await RawSocket.connect(port: port)
            var open = [first]
            defer { for fd in open { RawSocket.reset(fd) } }
            try await RawSocket.send(first, head)
            let end = ContinuousClock.now + .seconds(60)
            while try await SlowReaderTests.gauge(api, "syncapi_request_body_bytes") != 60_000 {
                guard ContinuousClock.now < end else { throw TestFailure("the first body never took its place") }
            }
            // A second one does not fit beside it: 503 at once, with Retry-After.
            let second = try await RawSocket.connect(port: port)
            open.append(second)
            try await RawSocket.send(second, head)
            let refused = try await RawSocket.read(second, until: "\r\n\r\n")
            #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused.prefix(60))")
            #expect(refused.lowercased().contains("retry-after: 1"))
            // A small write fits beside the first.
            #expect(try await api.call(.put, "/api/v1/contacts/small", body: #"{"firstName":"S"}"#).status == .ok)
            // The first client goes away: its place comes back, and a body as large is read again.
            RawSocket.reset(first)
            open.removeFirst()
            let large = #"{"firstName":"L","notes":""# + String(repeating: "n", count: 9_000) + #""}"#
            var status = HTTPResponse.Status.serviceUnavailable
            while status == .serviceUnavailable, ContinuousClock.now < end + .seconds(60) {
                status = try await api.call(.put, "/api/v1/contacts/large", body: large + String(repeating: " ", count: 50_000)).status
            }
            #expect(status == .ok)
        }
    }
}
