import Foundation
import SyncAPI
import TestSupport

/// The real `syncapi` executable, started as its own process on a free port, for what only a process shows: TLS on
/// a socket, signals, a kill in the middle of writes. It is the binary `swift build` put beside the test bundle.
struct ServerProcess {
    let pid: pid_t
    let port: Int
    let log: String

    static func binary() throws -> String { try BuiltBinary.path() }

    /// Starts `syncapi serve` with `arguments` on a port the kernel picks (`--port 0`: no other test or outgoing
    /// connection can hold it between a choice and the bind) and waits until `/health` answers. `prefix`: a command
    /// that runs it (`prlimit …`, which execs it: the pid is the server's).
    static func start(
        _ arguments: [String], prefix: [String] = [], scheme: String = "http", curlOptions: [String] = []
    ) async throws -> ServerProcess {
        let log = TestScratch.path("server-", suffix: ".log")
        // As docs/operations.md recommends: two malloc arenas, so peak memory does not depend on how many threads
        // happened to allocate (the memory tests measure the server, not glibc's arena spread).
        let pid = try spawn(prefix + serveCommand() + arguments, output: log)
        do {
            let server = try await listening(pid: pid, log: log, within: .seconds(120))
            try await server.waitUntilHealthy(scheme: scheme, curlOptions: curlOptions)
            return server
        } catch {
            ServerProcess(pid: pid, port: 0, log: log).killAndReap()
            throw error
        }
    }

    /// `syncapi serve` on the port the kernel picks, as the tests start it.
    static func serveCommand() throws -> [String] {
        ["env", "MALLOC_ARENA_MAX=2", try binary(), "serve", "--port", "0", "--bcrypt-cost", "4"]
    }

    /// Waits for the server's log to say where it listens (the event), and answers the server on that port. Throws
    /// when the process ends first or `limit` passes.
    static func listening(pid: pid_t, log: String, within limit: Duration) async throws -> ServerProcess {
        let marker = "listening on 127.0.0.1:"
        let deadline = ContinuousClock.now + limit
        while true {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: marker),
                let port = Int(text[range.upperBound...].prefix(while: \.isNumber))
            {
                return ServerProcess(pid: pid, port: port, log: log)
            }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == 0, ContinuousClock.now < deadline else {
                throw TestFailure("the server never said where it listens: \(text)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func waitUntilHealthy(scheme: String, curlOptions: [String]) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let answer = try? await Curl.call(curlOptions + ["\(scheme)://localhost:\(port)/health"]), answer.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("the server did not answer /health: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Sends SIGTERM and waits for the process to end (SIGKILL when it has not within `limit`): whether it ended in
    /// time, and how long it took.
    func terminate(within limit: Duration) async -> (exited: Bool, took: Duration) {
        let start = ContinuousClock.now
        kill(pid, SIGTERM)
        let exited = await waitForExit(within: limit)
        let took = ContinuousClock.now - start
        if !exited { kill(pid, SIGKILL) }
        return (exited, took)
    }

    /// Waits for the process to end; true when it ended within `limit`.
    func waitForExit(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Kills the process and reaps it (a killed process ends at once, so the short blocking wait is fine in a `defer`).
    func killAndReap() {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// Starts a command without waiting for it; its output goes to `output`.
    static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        try TestPostgres.spawn(arguments, output: output)
    }
}

/// HTTP over real sockets with curl (HTTP/1.1 and HTTP/2, TLS).
enum Curl {
    struct Answer {
        let status: Int
        let version: String
        let body: String
    }

    /// Runs curl; the status and HTTP version come from `-w`, the body from a file.
    /// Waits (ceiling 60 s) until the gauge `name` of the server's `/metrics` reads at least `value`: the event a test
    /// needs (streams open, a body being read) instead of a guess at how long it takes.
    static func awaitGauge(_ base: String, _ name: String, atLeast value: Double) async throws {
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end {
            let metrics = try await call(["\(base)/metrics"]).body
            for line in metrics.split(separator: "\n") where line.hasPrefix("\(name) ") {
                if let read = Double(line.dropFirst(name.count + 1)), read >= value { return }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("\(name) never reached \(value) at \(base)")
    }

    static func call(_ arguments: [String]) async throws -> Answer {
        let bodyPath = TestScratch.path("curl-")
        defer { try? FileManager.default.removeItem(atPath: bodyPath) }
        let out = try await TestPostgres.run(["curl", "-s", "-m", "20", "-o", bodyPath, "-w", "%{http_code} %{http_version}"] + arguments)
        let parts = out.split(separator: " ")
        return Answer(
            status: Int(parts.first ?? "") ?? 0, version: parts.count > 1 ? String(parts[1]) : "",
            body: (try? String(contentsOfFile: bodyPath, encoding: .utf8)) ?? "")
    }

    /// Signs up on a running server and returns the token.
    static func signup(_ base: String, options: [String] = [], username: String = "alice") async throws -> String {
        let answer = try await call(
            options + ["-X", "POST", "\(base)/api/v1/signup", "-d", #"{"family":"F","username":"\#(username)","password":"password1"}"#])
        guard answer.status == 201, let token = SyncAPITestJSON.string(answer.body, "token") else {
            throw TestFailure("signup failed: \(answer.status) \(answer.body)")
        }
        return token
    }
}

/// A member of a JSON object answer, for curl-based tests.
enum SyncAPITestJSON {
    static func string(_ body: String, _ key: String) -> String? {
        (try? JSONParser.parse(body))?[key]?.stringValue
    }
}
