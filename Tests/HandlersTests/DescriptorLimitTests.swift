import Foundation
import SyncAPI
import TestSupport
import Testing

/// The open-file limit bounds the connections an instance holds (`DescriptorBudget`). Past the limit the process has
/// no descriptor left for its database or its runtime: with 20,000 held `/changes` streams under a 20,000 limit the
/// server stopped on SIGILL (libdispatch could not open the `/proc` file it watches its threads with).
@Suite("Open-file limit", .sharingTheMachine)
struct DescriptorLimitTests {
    static func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    @Test(
        "under a limit of 400 descriptors, --max-connections 10000 holds 200 clients: 420 idle ones never take the server's last descriptors, and it answers once they leave"
    )
    func connectionsStayUnderTheLimit() async throws {
        let folder = TestScratch.path("fd-limit-", suffix: "")
        let server = try await ServerProcess.start(
            ["--database", "sqlite:\(folder)/db.sqlite", "--max-connections", "10000", "--max-connections-per-address", "10000"],
            prefix: ["prlimit", "--nofile=400:400", "--"])
        defer { server.killAndReap() }
        let log = try String(contentsOfFile: server.log, encoding: .utf8)
        #expect(log.contains("--max-connections lowered"), "\(log)")
        #expect(log.contains("held=200"), "\(log)")

        let before = Self.openDescriptors(server.pid)
        var clients: [Int32] = []
        defer { for client in clients { close(client) } }
        for _ in 0..<420 { clients.append(try OperatorTests.connect(port: server.port)) }
        // The server takes clients until its ceiling (NIO may accept one batch past it before it stops reading); the
        // rest wait in the listen backlog, holding none of its descriptors. Without a ceiling under the limit it took
        // 363 of them, at once, and every descriptor. (The server's own descriptors move by a few meanwhile: the
        // counts allow for that.)
        var most = 0
        // Polled: the event is the server's own descriptor count; the ceiling only ends a run that never gets there.
        let deadline = ContinuousClock.now + .seconds(300)
        while most < before + 190, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            most = max(most, Self.openDescriptors(server.pid))
        }
        #expect(most >= before + 190, "the server took \(most - before) clients")
        #expect(most - before <= 216, "the server took \(most - before) clients")
        #expect(most < 400, "the server held \(most) descriptors under a limit of 400")
        for client in clients { close(client) }
        clients = []
        let health = try await Curl.call(["http://localhost:\(server.port)/health"])
        #expect(health.status == 200)
        most = max(most, Self.openDescriptors(server.pid))
        #expect(most < 400, "the server held \(most) descriptors under a limit of 400")
    }
}
