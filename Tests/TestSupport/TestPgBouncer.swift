import Foundation

/// A real PgBouncer (Debian's 1.18) in transaction mode in front of a test PostgreSQL, on a free loopback port, with a
/// pool of 3 server connections so that consecutive transactions of one client land on different server connections
/// (where a named prepared statement of another connection does not exist). Stopped when the test process ends.
public struct TestPgBouncer: Sendable {
    public let port: Int
    let pid: pid_t

    /// The pgbouncer binary, or nil when it is not installed (`apt-get install -y pgbouncer`).
    public static var binary: String? {
        ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a PgBouncer for the databases of the PostgreSQL at `postgresPort` (trust authentication, as the test
    /// PostgreSQL has).
    public static func start(postgresPort: Int) async throws -> TestPgBouncer {
        guard let binary else { throw TestPostgresError(message: "pgbouncer is not installed (apt-get install -y pgbouncer)") }
        let asRoot = getuid() == 0
        let folder = "/tmp/syncapi-pgbouncer-\(ProcessInfo.processInfo.processIdentifier)-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if asRoot { try await TestPostgres.run(["chown", "postgres:postgres", folder]) }
        for _ in 0..<10 {
            let port = TestPorts.candidate()
            let ini = """
                [databases]
                * = host=127.0.0.1 port=\(postgresPort)
                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(folder)/users.txt
                pool_mode = transaction
                default_pool_size = 3
                max_client_conn = 500
                ignore_startup_parameters = extra_float_digits
                logfile = \(folder)/pgbouncer.log
                pidfile = \(folder)/pgbouncer.pid

                """
            try ini.write(toFile: folder + "/pgbouncer.ini", atomically: true, encoding: .utf8)
            try "\"postgres\" \"\"\n".write(toFile: folder + "/users.txt", atomically: true, encoding: .utf8)
            if asRoot { try await TestPostgres.run(["chown", "-R", "postgres:postgres", folder]) }
            let prefix = asRoot ? ["runuser", "-u", "postgres", "--"] : []
            let pid = try TestPostgres.spawn(prefix + [binary, folder + "/pgbouncer.ini"], output: folder + "/stdout.log")
            // Up once it accepts connections.
            for _ in 0..<50 {
                if (try? await TestPostgres.run(["psql", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", "postgres", "-c", "SELECT 1"]))
                    != nil
                {
                    let me = ProcessInfo.processInfo.processIdentifier
                    try await TestPostgres.run([
                        "sh", "-c", "(while kill -0 \(me) 2>/dev/null; do sleep 1; done; kill \(pid); rm -rf \(folder)) >/dev/null 2>&1 </dev/null &",
                    ])
                    return TestPgBouncer(port: port, pid: pid)
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            kill(pid, SIGTERM)
        }
        throw TestPostgresError(message: "could not start pgbouncer (see \(folder))")
    }

    /// `url` (a database of the test PostgreSQL) through this PgBouncer.
    public func url(for direct: String) -> String {
        direct.replacingOccurrences(of: #":\d+/"#, with: ":\(port)/", options: .regularExpression)
    }

    public func stop() { kill(pid, SIGTERM) }
}
