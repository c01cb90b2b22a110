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

    /// Bodies take their place before authentication: one address with many connections could hold the whole budget
    /// and make every other client's writes wait until its bodies time out. An address holds at most its share.
    @Test("one client address holds at most its share of the body memory; another address still writes")
    func addressShare() async throws {
        try await TestApp.run(
            .sqlite, mode: .live,
            configure: {
                $0.bodyMemoryBytes = 1_000_000
                $0.bodyMemoryPerAddressBytes = 100_000
                $0.trustedProxies = ["127.0.0.1", "::1"]
            }
        ) { client in
            let port = try #require(client.port)
            let api = try await APIClient.signedUp(client)
            func head(_ address: String) -> String {
                "PUT /api/v1/contacts/slow HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: \(address)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 60000\r\n\r\n{"
            }
            let first = try await RawSocket.connect(port: port)
            var open = [first]
            defer { for fd in open { RawSocket.reset(fd) } }
            try await RawSocket.send(first, head("198.51.100.7"))
            let end = ContinuousClock.now + .seconds(60)
            while try await SlowReaderTests.gauge(api, "syncapi_request_body_bytes") != 60_000 {
                guard ContinuousClock.now < end else { throw TestFailure("the first body never took its place") }
            }
            // The same address again: past its share, 429 at once, though the instance has room.
            let second = try await RawSocket.connect(port: port)
            open.append(second)
            try await RawSocket.send(second, head("198.51.100.7"))
            let refused = try await RawSocket.read(second, until: "\r\n\r\n")
            #expect(refused.hasPrefix("HTTP/1.1 429"), "\(refused.prefix(60))")
            #expect(refused.lowercased().contains("retry-after: 1"))
            // Another address behind the same proxy: a body as large is read and stored.
            let large = #"{"firstName":"L","notes":""# + String(repeating: "n", count: 9_000) + #""}"#
            let other = try await api.call(
                .put, "/api/v1/contacts/other", body: large + String(repeating: " ", count: 50_000),
                headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.8"])
            #expect(other.status == .ok, "\(other.body.prefix(200))")
            // The proxy itself (no client named) has no share of its own: only the instance's bound applies.
            let proxied = try await api.call(.put, "/api/v1/contacts/proxied", body: large + String(repeating: " ", count: 50_000))
            #expect(proxied.status == .ok, "\(proxied.body.prefix(200))")
            // The first address's body goes away: its share comes back.
            RawSocket.reset(first)
            open.removeFirst()
            var status = HTTPResponse.Status.tooManyRequests
            while status == .tooManyRequests, ContinuousClock.now < end + .seconds(60) {
                status = try await api.call(
                    .put, "/api/v1/contacts/again", body: large + String(repeating: " ", count: 50_000),
                    headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.7"]
                ).status
            }
            #expect(status == .ok)
        }
    }
}
