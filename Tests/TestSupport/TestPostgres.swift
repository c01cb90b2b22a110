import Foundation

/// A real PostgreSQL server for the tests, started once per test process with `initdb`/`pg_ctl` in a temporary
/// folder on a free loopback port, and torn down when the process ends (a watchdog stops it even after a crash).
public actor TestPostgres {
    public static let shared = TestPostgres()

    private var starting: Task<Int, any Error>?
    private var counter = 0
    private var control: (prefix: [String], data: String, options: String, folder: String)?

    /// A server of its own, for a test that stops and restarts it (outages); the shared one is never stopped.
    public init() {}

    /// Runs `body` with a server of its own (a test that stops, restarts or freezes it owns it), stopped at the end
    /// whatever happens: a postmaster left running loads the machine.
    public static func withOwn<T: Sendable>(_ body: @Sendable (TestPostgres) async throws -> T) async throws -> T {
        let postgres = TestPostgres()
        do {
            let value = try await body(postgres)
            try await postgres.stop()
            return value
        } catch {
            try? await postgres.stop()
            throw error
        }
    }

    /// Stops the server at once (`pg_ctl stop -m fast`: open connections are terminated, like a crash or failover).
    public func stop() async throws {
        guard let control else { return }
        try await Self.run(control.prefix + ["pg_ctl", "-D", control.data, "-m", "fast", "-w", "stop"])
    }

    /// Starts it again on the same port, after `stop()`.
    public func restart() async throws {
        guard let control else { return }
        try await Self.run(
            control.prefix + ["pg_ctl", "-D", control.data, "-l", control.folder + "/server.log", "-o", control.options, "-w", "-t", "60", "start"])
    }

    /// A fresh, empty database on the shared server.
    /// `logStatements`: every statement run on it, with its parameters, goes to the server log (`log`).
    public func newDatabaseURL(logStatements: Bool = false) async throws -> String {
        let port = try await start()
        counter += 1
        let name = "t\(ProcessInfo.processInfo.processIdentifier)_\(counter)"
        var sql = ["CREATE DATABASE \(name)"]
        if logStatements { sql.append("ALTER DATABASE \(name) SET log_statement = 'all'") }
        try await Self.run(
            ["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-q"] + sql.flatMap { ["-c", $0] })
        return "postgres://postgres@127.0.0.1:\(port)/\(name)"
    }

    /// Runs a statement naming a fresh marker on `database` (one of `newDatabaseURL(logStatements: true)`) and
    /// returns the marker: once it is in the log, so is every statement logged before it.
    public func logMarker(database: String) async throws -> String {
        let port = try await start()
        let marker = "syncapi_log_marker_\(UInt64.random(in: 0..<UInt64.max))"
        try await Self.run(
            ["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-q", "-c", "SELECT '\(marker)'"])
        return marker
    }

    /// Runs SQL as the superuser on a database of the shared server (`url`: one of `newDatabaseURL()`), behind the
    /// application's back: no notice goes out, as when a change reaches the database by another way than this instance.
    public func execute(_ sql: String, on url: String) async throws {
        let port = try await start()
        let database = String(url.split(separator: "/").last ?? "")
        try await Self.run(["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    /// One value of a query run as the superuser on a database of this server (`url`: one of `newDatabaseURL()`).
    public func value(of sql: String, on url: String) async throws -> String {
        let port = try await start()
        let database = String(url.split(separator: "/").last ?? "")
        return try await Self.run(["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-Atq", "-c", sql])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The shared server's log file.
    public func log() async throws -> String {
        _ = try await start()
        return control!.folder + "/server.log"
    }

    /// The server's port, started once; concurrent callers wait for the same start (the actor is re-entered while
    /// the commands run).
    private func start() async throws -> Int {
        if let starting { return try await starting.value }
        let task = Task { try await self.initialize() }
        starting = task
        do {
            return try await task.value
        } catch {
            // A failed start is not kept: the next test tries again, rather than every later test failing with it.
            starting = nil
            throw error
        }
    }

    private func initialize() async throws -> Int {
        var port: Int?
        let asRoot = getuid() == 0
        let folder = "/tmp/syncapi-pg-\(ProcessInfo.processInfo.processIdentifier)-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let prefix = asRoot ? ["runuser", "-u", "postgres", "--"] : []
        if asRoot { try await Self.run(["chown", "postgres:postgres", folder]) }
        let data = folder + "/data"
        try await Self.run(prefix + ["initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        var lastError: (any Error)?
        for _ in 0..<10 {
            let candidate = TestPorts.candidate()
            let options =
                "-c listen_addresses=127.0.0.1 -p \(candidate) -k \(folder) -c fsync=off -c synchronous_commit=off"
                + " -c full_page_writes=off -c max_connections=600 -c shared_buffers=128MB"
                // Every line of the log names its database (`StatementLog` counts one database's lines).
                + " -c log_line_prefix=db:%d:"
            do {
                try await Self.run(prefix + ["pg_ctl", "-D", data, "-l", folder + "/server.log", "-o", options, "-w", "-t", "60", "start"])
                port = candidate
                control = (prefix, data, options, folder)
                break
            } catch {
                lastError = error
            }
        }
        guard let port else { throw lastError ?? TestPostgresError(message: "could not start PostgreSQL") }
        // Stop the server when this test process ends, however it ends.
        let stop = (prefix + ["pg_ctl", "-D", data, "-m", "immediate", "stop"]).joined(separator: " ")
        let me = ProcessInfo.processInfo.processIdentifier
        try await Self.run([
            "sh", "-c",
            "(while kill -0 \(me) 2>/dev/null; do sleep 1; done; \(stop); rm -rf \(folder)) >/dev/null 2>&1 </dev/null &",
        ])
        return port
    }

    /// Runs a command to completion on a thread of its own, never on the few threads that run every test's tasks: a
    /// blocking wait there starves the other tests (their requests then miss their deadlines on a busy machine).
    @discardableResult
    public static func run(_ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runBlocking(arguments) }) }.start()
        }
    }

    /// Runs a command to completion (posix_spawn + waitpid; Foundation's `Process.waitUntilExit` can hang in
    /// concurrent tests); throws with its output when it fails.
    private static func runBlocking(_ arguments: [String]) throws -> String {
        // Output goes to a file, not a pipe: a server that pg_ctl starts would hold a pipe open forever.
        let outputPath = NSTemporaryDirectory() + "syncapi-cmd-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(arguments, output: outputPath)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exited normally with status 0.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw TestPostgresError(message: "\(arguments.joined(separator: " ")) failed (\(status)): \(output)")
        }
        return output
    }

    /// Starts a command without waiting for it; its standard output and error go to the file `output`.
    ///
    /// The child gets no other descriptor of the test process. SwiftNIO opens its sockets without `CLOEXEC`, so a
    /// child would otherwise hold every connection the tests had open when it started, for as long as it lives (a
    /// postmaster that `pg_ctl` starts lives for the whole test): a connection the server closes would stay open at
    /// PostgreSQL's end, and an abandoned write's backend would keep its transaction, and its space's lock, open.
    public static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw TestPostgresError(message: "cannot keep the test's descriptors from \(arguments[0]) (glibc 2.34 or later needed)")
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ)
        guard spawned == 0 else { throw TestPostgresError(message: "cannot run \(arguments[0]): error \(spawned)") }
        return pid
    }
}

extension TestPostgres {
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later): the child closes every descriptor from the
    /// one given. Looked up at run time, since Swift's Glibc module does not declare it.
    fileprivate static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}

/// Why the test PostgreSQL could not be used.
public struct TestPostgresError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
