import CompressNIO
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SyncAPI
import Synchronization
import TestSupport
import Testing

@testable import Handlers

/// Body limits, and the same endpoints over real sockets.
@Suite("Limits and live HTTP", .sharingTheMachine)
struct LimitsHTTPTests {
    /// During a PostgreSQL outage the slowest answer took 16.0 s against a 15 s limit: the work had the whole limit
    /// and a write in progress was then waited for a second more. The two now share the limit.
    @Test("the work's limit and a write's grace together make the request's time limit")
    func timeLimitShared() {
        for limit in [Duration.milliseconds(500), .seconds(3), .seconds(15), .seconds(120)] {
            let (work, grace) = RequestDeadline.split(limit)
            #expect(work + grace == limit)
            #expect(grace > .zero && grace <= .seconds(1) && work >= limit * 0.8)
        }
    }

    @Test("a body over the limit is 413 payload_too_large", arguments: Backend.allCases)
    func bodyLimit(backend: Backend) async throws {
        try await TestApp.run(backend, configure: { $0.bodyMaxBytes = 2048 }) { client in
            let api = try await APIClient.signedUp(client)
            let notes = String(repeating: "n", count: 3000)
            let answer = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A","notes":"\#(notes)"}"#)
            #expect(answer.status == .contentTooLarge)
            #expect(answer.json?["code"] == .string("payload_too_large"))
            #expect(answer.headers[.contentType] == "application/problem+json")
        }
    }

    @Test(
        "an account call's body over 16 KiB is 413 whatever the item limit; a declared length over it is refused unread", arguments: Backend.allCases)
    func accountBodyLimit(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live) { client in
            let padding = String(repeating: "p", count: 17 << 10)
            let login = try await APIClient(client: client).call(
                .post, "/api/v1/login", body: #"{"username":"alice","password":"\#(padding)"}"#)
            #expect(login.status == .contentTooLarge && login.json?["code"] == .string("payload_too_large"))
            let signup = try await APIClient(client: client).call(
                .post, "/api/v1/signup", body: #"{"family":"\#(padding)","username":"alice","password":"password1"}"#)
            #expect(signup.status == .contentTooLarge)
            // A head that declares 1 MiB, and no body yet: answered at once, the body never waited for.
            let port = try #require(client.port)
            let fd = try await RawSocket.connect(port: port)
            defer { close(fd) }
            try await RawSocket.send(
                fd, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n")
            let answer = try await RawSocket.read(fd, until: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(200))")
            // Small bodies still pass.
            #expect(try await APIClient.signedUp(client).token != nil)
        }
    }

    @Test("the README walkthrough over a live server: signup, PUT, ctcsync twice", arguments: Backend.allCases)
    func liveWalkthrough(backend: Backend) async throws {
        try await TestApp.run(backend, mode: .live) { client in
            let api = try await APIClient.signedUp(client)
            let put = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Bob","emails":["bob@example.org"]}"#)
            #expect(put.status == .ok)
            let first = try await api.call(.get, "/api/v1/ctcsync")
            #expect(first.json?["sync"] == .bool(false))
            let date = try #require(first.json?["date"]?.stringValue)
            #expect(try await api.call(.delete, "/api/v1/contacts/c1").status == .noContent)
            let second = try await api.call(.get, "/api/v1/ctcsync?date=\(date)")
            #expect(second.json?["sync"] == .bool(true))
            #expect(second.json?["deleted"] == .array([.string("c1")]))
            #expect(second.json?["updated"] == .array([]))
        }
    }

    @Test("answers over 1 KiB are gzipped for clients that accept it; the content is the same")
    func gzip() async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            for n in 0..<20 { _ = try await api.call(.put, "/api/v1/contacts/c\(n)", body: #"{"firstName":"Contact \#(n)"}"#) }
            let plain = try await api.call(.get, "/api/v1/ctcsync")
            #expect(plain.headers[.contentEncoding] == nil && plain.body.utf8.count > 1024)
            let response = try await client.executeRequest(
                uri: "/api/v1/ctcsync", method: .get,
                headers: [.authorization: "Bearer \(api.token ?? "")", .acceptEncoding: "br;q=1.0, gzip;q=0.5"], body: nil)
            #expect(response.headers[.contentEncoding] == "gzip")
            #expect(response.headers[.eTag] == plain.headers[.eTag])
            var compressed = response.body
            #expect(compressed.readableBytes < plain.body.utf8.count / 2)
            let inflated = try compressed.decompress(with: .gzip)
            #expect(String(buffer: inflated) == plain.body)
            // Small answers, and clients that refuse gzip, get plain bodies.
            let small = try await client.executeRequest(
                uri: "/api/v1/contacts/c1", method: .get, headers: [.authorization: "Bearer \(api.token ?? "")", .acceptEncoding: "gzip"],
                body: nil)
            #expect(small.headers[.contentEncoding] == nil)
            let refused = try await client.executeRequest(
                uri: "/api/v1/ctcsync", method: .get, headers: [.authorization: "Bearer \(api.token ?? "")", .acceptEncoding: "gzip;q=0"],
                body: nil)
            #expect(refused.headers[.contentEncoding] == nil)
        }
    }

    @Test("GET /metrics counts requests by route pattern and status, in Prometheus text")
    func metrics() async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"A"}"#)
            _ = try await api.call(.get, "/api/v1/contacts/c1")
            _ = try await api.call(.get, "/api/v1/contacts/nope")
            let metrics = try await api.call(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = metrics.body
            #expect(text.contains(#"syncapi_http_requests_total{method="GET",route="/api/v1/contacts/{id}",status="200"} 1"#))
            #expect(text.contains(#"syncapi_http_requests_total{method="GET",route="/api/v1/contacts/{id}",status="404"} 1"#))
            #expect(text.contains("syncapi_http_request_duration_seconds_bucket"))
            #expect(!text.contains("c1"), "ids must not become label values")
        }
    }

    @Test("health and readiness", arguments: Backend.allCases)
    func operations(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = APIClient(client: client)
            let health = try await api.call(.get, "/health")
            let ready = try await api.call(.get, "/ready")
            #expect(health.status == .ok && ready.status == .ok)
        }
    }

    @Test("a flood of /ready costs the database one check per second (security audit L2)", arguments: Backend.allCases)
    func readinessShared(backend: Backend) async throws {
        try await backend.withStore { store in
            let checks = Atomic(0)
            // The probe's clock, moved by the test: the answer's age passes a second without a second passing.
            let start = ContinuousClock.now
            let elapsed = Mutex(Duration.zero)
            let probe = ReadinessProbe(now: { start + elapsed.withLock { $0 } }) {
                checks.add(1, ordering: .relaxed)
                try await store.ping()
            }
            let answers = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<200 { group.addTask { await probe.ready() } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 } && answers.count == 200)
            #expect(checks.load(ordering: .relaxed) == 1)
            // Just within the second: still the kept answer.
            elapsed.withLock { $0 = .milliseconds(999) }
            #expect(await probe.ready())
            #expect(checks.load(ordering: .relaxed) == 1)
            elapsed.withLock { $0 = .milliseconds(1001) }
            #expect(await probe.ready())
            #expect(checks.load(ordering: .relaxed) == 2)
        }
    }

    @Test(
        "garbage never answers 500",
        arguments: [
            "{", "[]", "null", "1", "\"text\"", "{\"firstName\":{}}", "{\"firstName\":[1]}", "{\"emails\":\"a\"}",
            "{\"firstName\":\"\\ud800\"}", "{\"a\":1,\"a\":2}", String(repeating: "[", count: 10_000),
            "{\"firstName\":1e400}", "\u{FEFF}{}",
        ])
    func garbage(body: String) async throws {
        try await TestApp.run(.sqlite) { client in
            let api = try await APIClient.signedUp(client)
            let answer = try await api.call(.put, "/api/v1/contacts/c1", body: body)
            #expect(answer.status == .badRequest)
            #expect(answer.headers[.contentType] == "application/problem+json")
        }
    }
}
