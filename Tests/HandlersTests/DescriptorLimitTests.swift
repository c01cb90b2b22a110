import Foundation
import SyncCore
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

    /// Connections waiting in the listen backlog of `port`, not yet accepted (the kernel's count, `/proc/net/tcp`).
    static func backlog(port: Int) -> Int {
        let wanted = String(format: ":%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                // local address, remote address, state (0A: listening), tx_queue:rx_queue (the accept queue when listening)
                guard fields.count > 4, fields[1].hasSuffix(wanted), fields[3] == "0A" else { continue }
                return Int(fields[4].split(separator: ":").last ?? "", radix: 16) ?? 0
            }
        }
        return 0
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
        // The server takes clients until its ceiling; the rest wait in the listen backlog, holding none of its descriptors.
        // Waited for: every client either taken (a descriptor of the server) or waiting in the backlog.
        var most = 0
        var waiting = 0
        let deadline = ContinuousClock.now + .seconds(60)
        repeat {
            try await Task.sleep(for: .milliseconds(20))
            most = max(most, Self.openDescriptors(server.pid))
            waiting = Self.backlog(port: server.port)
        } while (most - before) + waiting < clients.count && ContinuousClock.now < deadline
        #expect((most - before) + waiting >= clients.count, "taken \(most - before), waiting \(waiting)")
        #expect(most - before <= 200, "the server took \(most - before) clients")
        #expect(most < 400, "the server held \(most) descriptors under a limit of 400")
        for client in clients { close(client) }
        clients = []
        let health = try await Curl.call(["http://localhost:\(server.port)/health"])
        #expect(health.status == 200)
        most = max(most, Self.openDescriptors(server.pid))
        #expect(most < 400, "the server held \(most) descriptors under a limit of 400")
    }
}
