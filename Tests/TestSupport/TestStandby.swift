import Foundation

/// A PostgreSQL primary of its own with one streaming hot standby (`pg_basebackup -R -X stream`), for the tests of
/// reads from standbys (protocol §13). The standby may be made to lag (`recovery_min_apply_delay`), stopped as in a
/// crash and started again. Both servers stop when the test process ends (a watchdog), or at `tearDown()`.
public actor TestStandby {
    public let primaryPort: Int
    public let standbyPort: Int
    private let prefix: [String]
    private let folder: String
    private let standbyOptions: String
    private var counter = 0

    private init(primaryPort: Int, standbyPort: Int, prefix: [String], folder: String, standbyOptions: String) {
        self.primaryPort = primaryPort
        self.standbyPort = standbyPort
        self.prefix = prefix
        self.folder = folder
        self.standbyOptions = standbyOptions
    }

    /// Runs `body` with a primary and standby of its own, stopped and removed at its end however it ends (for a test
    /// that stops, promotes or breaks them).
    public static func with<T: Sendable>(
        applyDelay: String? = nil, _ body: @Sendable (TestStandby) async throws -> T
    ) async throws -> T {
        let servers = try await start(applyDelay: applyDelay)
        do {
            let result = try await body(servers)
            await servers.tearDown()
            return result
        } catch {
            await servers.tearDown()
            throw error
        }
    }

    /// Starts a primary and a standby streaming from it; `applyDelay` (a PostgreSQL duration such as `"300ms"`) holds
    /// every commit back that long on the standby.
    public static func start(applyDelay: String? = nil) async throws -> TestStandby {
        let asRoot = getuid() == 0
        let folder = "/tmp/syncapi-standby-\(ProcessInfo.processInfo.processIdentifier)-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let prefix = asRoot ? ["runuser", "-u", "postgres", "--"] : []
        if asRoot { try await TestPostgres.run(["chown", "postgres:postgres", folder]) }
        // The initdb defaults allow replication connections from loopback (pg_hba.conf), and `wal_level=replica`.
        try await TestPostgres.run(
            prefix + ["initdb", "-D", folder + "/primary", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        let common = "-c listen_addresses=127.0.0.1 -k \(folder) -c fsync=off -c full_page_writes=off -c max_connections=200"
        let primaryPort = try await startServer(prefix: prefix, data: folder + "/primary", log: folder + "/primary.log") { port in
            "\(common) -p \(port) -c synchronous_commit=off -c max_wal_senders=5 -c wal_keep_size=256MB"
        }
        // Every standby's watchdog: both servers go when this test process ends, however it ends.
        let me = ProcessInfo.processInfo.processIdentifier
        let stopAll = ["primary", "standby"].map { (prefix + ["pg_ctl", "-D", folder + "/" + $0, "-m", "immediate", "stop"]).joined(separator: " ") }
        try await TestPostgres.run([
            "sh", "-c",
            "(while kill -0 \(me) 2>/dev/null; do sleep 1; done; \(stopAll.joined(separator: "; ")); rm -rf \(folder)) >/dev/null 2>&1 </dev/null &",
        ])
        try await TestPostgres.run(
            prefix + ["pg_basebackup", "-D", folder + "/standby", "-R", "-X", "stream", "-h", "127.0.0.1", "-p", "\(primaryPort)", "-U", "postgres"])
        var standbyOptions = ""
        let standbyPort = try await startServer(prefix: prefix, data: folder + "/standby", log: folder + "/standby.log") { port in
            standbyOptions = "\(common) -p \(port) -c hot_standby=on" + (applyDelay.map { " -c recovery_min_apply_delay=\($0)" } ?? "")
            return standbyOptions
        }
        return TestStandby(primaryPort: primaryPort, standbyPort: standbyPort, prefix: prefix, folder: folder, standbyOptions: standbyOptions)
    }

    /// Starts a server on a free port (tries a few); returns the port.
    private static func startServer(prefix: [String], data: String, log: String, options: (Int) -> String) async throws -> Int {
        var lastError: (any Error)?
        for _ in 0..<10 {
            let port = TestPorts.candidate()
            do {
                try await TestPostgres.run(prefix + ["pg_ctl", "-D", data, "-l", log, "-o", options(port), "-w", "-t", "120", "start"])
                return port
            } catch {
                lastError = error
            }
        }
        throw lastError ?? TestPostgresError(message: "could not start PostgreSQL in \(data)")
    }

    /// A fresh database made on the primary; the standby has it once replayed. Returns both URLs.
    public func newDatabase() async throws -> (primary: String, standby: String) {
        counter += 1
        let name = "s\(ProcessInfo.processInfo.processIdentifier)_\(counter)"
        try await TestPostgres.run([
            "psql", "-h", "127.0.0.1", "-p", "\(primaryPort)", "-U", "postgres", "-d", "postgres", "-q", "-c", "CREATE DATABASE \(name)",
        ])
        return ("postgres://postgres@127.0.0.1:\(primaryPort)/\(name)", "postgres://postgres@127.0.0.1:\(standbyPort)/\(name)")
    }

    /// Stops the standby as in a crash (`pg_ctl stop -m immediate`): its connections drop at once.
    public func stopStandby() async throws {
        try await TestPostgres.run(prefix + ["pg_ctl", "-D", folder + "/standby", "-m", "immediate", "-w", "stop"])
    }

    /// Starts the stopped standby again on the same port; it resumes streaming from the primary.
    public func startStandby() async throws {
        try await TestPostgres.run(
            prefix + ["pg_ctl", "-D", folder + "/standby", "-l", folder + "/standby.log", "-o", standbyOptions, "-w", "-t", "120", "start"])
    }

    /// Stops the primary: as in a crash (`immediate`: what the standby has not received is lost with it), or cleanly
    /// (`fast`: the standby receives every commit first, as in a planned switchover).
    public func stopPrimary(crash: Bool) async throws {
        try await TestPostgres.run(prefix + ["pg_ctl", "-D", folder + "/primary", "-m", crash ? "immediate" : "fast", "-w", "stop"])
    }

    /// Promotes the standby (`pg_ctl promote`): it ends recovery on a new timeline and takes writes on its port.
    public func promoteStandby() async throws {
        try await TestPostgres.run(prefix + ["pg_ctl", "-D", folder + "/standby", "-w", "-t", "120", "promote"])
    }

    /// Returns once the standby has replayed every commit the primary has made so far (a bounded poll: PostgreSQL
    /// tells no one when replay passes a position).
    public func waitReplayed(within limit: Duration = .seconds(180)) async throws {
        let target = try await psql(primaryPort, "SELECT pg_current_wal_lsn()")
        let end = ContinuousClock.now + limit
        while try await psql(standbyPort, "SELECT pg_last_wal_replay_lsn() >= '\(target)'::pg_lsn") != "t" {
            guard ContinuousClock.now < end else { throw TestPostgresError(message: "the standby did not replay \(target) within \(limit)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// One value of a query run with psql on the server at `port`.
    private func psql(_ port: Int, _ sql: String) async throws -> String {
        try await TestPostgres.run([
            "psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-Atq", "-c", sql,
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops both servers and removes their folder.
    public func tearDown() async {
        for server in ["standby", "primary"] {
            _ = try? await TestPostgres.run(prefix + ["pg_ctl", "-D", folder + "/" + server, "-m", "immediate", "-w", "stop"])
        }
        _ = try? await TestPostgres.run(["rm", "-rf", folder])
    }
}
