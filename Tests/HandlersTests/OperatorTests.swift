import Foundation
import NIOPosix
import SyncAPI
import TestSupport
import Testing

/// What an operator relies on (issue 8): slow senders are cut off, a restored backup never makes a client miss a
/// change, secrets stay out of output, the embedded database is private.
@Suite("Operating the syncapi process", .sharingTheMachine)
struct OperatorTests {
    /// An open TCP connection to the server on loopback; `receiveBuffer` (bytes) shrinks its receive window, as a
    /// phone on a slow link looks to the server.
    static func connect(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket") }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestFailure("connect")
        }
        return fd
    }

    /// Opens a TCP connection to the server, sends `bytes`, and returns how long until the server closes it.
    static func secondsUntilClosed(port: Int, sending bytes: String) throws -> Double {
        let fd = try connect(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let start = ContinuousClock.now
        _ = bytes.withCString { send(fd, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
        }
        return (ContinuousClock.now - start) / .seconds(1)
    }

    @Test("a request head or body that trickles in is cut off at its read timeout")
    func slowSenders() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start([
            "--database", "sqlite:\(folder)/db.sqlite", "--header-read-timeout", "1", "--body-read-timeout", "1", "--idle-timeout", "30",
        ])
        defer {
            server.killAndReap()
        }
        // The blocking reads run on NIO's blocking pool, not on one of the cooperative pool's threads (two on two cores).
        let port = server.port
        let head = try await NIOThreadPool.singleton.runIfActive {
            try Self.secondsUntilClosed(port: port, sending: "GET /health HTTP/1.1\r\nHost: x\r\n")
        }
        // 1 s by design; ignoring the option would hold it 10 s (the default head timeout) or to the test's 15 s.
        #expect(head < 8, "an unfinished head held the connection \(head) s")
        let body = try await NIOThreadPool.singleton.runIfActive {
            try Self.secondsUntilClosed(
                port: port, sending: "PUT /api/v1/contacts/c1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"first")
        }
        #expect(body < 8, "an unfinished body held the connection \(body) s")
        print("slow senders: head cut after \(head) s, body after \(body) s (timeouts 1 s)")
    }

    @Test("past --max-connections a new connection waits until one closes")
    func connectionCap() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let server = try await ServerProcess.start(["--database", "sqlite:\(folder)/db.sqlite", "--max-connections", "2"])
        defer {
            server.killAndReap()
        }
        let held = try await RawSocket.answeredConnections(2, port: server.port)
        let refused = try? await Curl.call(["-m", "2", "http://127.0.0.1:\(server.port)/health"])
        #expect(refused == nil, "a third connection was served while two were open")
        for fd in held { close(fd) }
        #expect(try await Curl.servedAgain(port: server.port))
    }

    @Test("restore-epoch: a date of sync issued before the restore answers sync: false")
    func restoreEpoch() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let database = "sqlite:\(folder)/db.sqlite"
        let server = try await ServerProcess.start(["--database", database])
        let base = "http://localhost:\(server.port)"
        let token = try await Curl.signup(base)
        let auth = ["-H", "Authorization: Bearer \(token)"]
        _ = try await Curl.call(auth + ["-X", "PUT", "\(base)/api/v1/contacts/c1", "-d", #"{"firstName":"Bob"}"#])
        let date = try #require(SyncAPITestJSON.string(try await Curl.call(auth + ["\(base)/api/v1/ctcsync"]).body, "date"))
        kill(server.pid, SIGTERM)
        _ = await server.waitForExit(within: .seconds(5))
        let output = try await TestPostgres.run([try ServerProcess.binary(), "restore-epoch", "--database", database])
        #expect(output.contains("new database id"))
        let restarted = try await ServerProcess.start(["--database", database])
        defer {
            restarted.killAndReap()
        }
        let answer = try JSONParser.parse(try await Curl.call(auth + ["http://localhost:\(restarted.port)/api/v1/ctcsync?date=\(date)"]).body)
        #expect(answer["sync"] == .bool(false))
        #expect(answer["date"]?.stringValue != date)
    }

    @Test("secrets: a database password is never printed; the SQLite file and folder are private")
    func secrets() async throws {
        let folder = try ProcessTests.temporaryFolder()
        // The command line, then the alternatives: the URL from SYNCAPI_DATABASE, the password from a file (flag or
        // SYNCAPI_DATABASE_PASSWORD_FILE). Each waits 30 s for a database that never answers, so they run at once;
        // no failure names a password.
        let passwordFile = "\(folder)/pgpass"
        try "f1le-s3cret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let binary = try ServerProcess.binary()
        let runs: [[String]] = [
            [binary, "migrate", "--database", "postgres://syncapi:s3cret-pw@127.0.0.1:1/none"],
            [binary, "migrate", "--database", "mysql://syncapi:s3cret-pw@host/db"],
            ["env", "SYNCAPI_DATABASE=postgres://syncapi:s3cret-pw@127.0.0.1:1/none", binary, "migrate"],
            [
                "env", "SYNCAPI_DATABASE=postgres://syncapi@127.0.0.1:1/none", "SYNCAPI_DATABASE_PASSWORD_FILE=\(passwordFile)",
                binary, "migrate",
            ],
            [binary, "migrate", "--database", "postgres://syncapi@127.0.0.1:1/none", "--database-password-file", passwordFile],
        ]
        let started = try runs.enumerated().map { n, arguments in
            let log = "\(folder)/out\(n).log"
            return (ServerProcess(pid: try ServerProcess.spawn(arguments, output: log), port: 0, log: log), arguments)
        }
        for (process, arguments) in started {
            #expect(await process.waitForExit(within: .seconds(60)), "\(arguments)")
            let output = try String(contentsOfFile: process.log, encoding: .utf8)
            #expect(!output.isEmpty)
            #expect(!output.contains("s3cret"), "\(arguments): \(output)")
        }
        // And they reach a real database: SYNCAPI_DATABASE alone, no --database.
        let url = try await TestPostgres.shared.newDatabaseURL()
        let migrated = try await TestPostgres.run(["env", "SYNCAPI_DATABASE=\(url)", try ServerProcess.binary(), "migrate"])
        #expect(migrated.contains("is migrated"), "\(migrated)")
        let dataFolder = "\(folder)/data"
        let server = try await ServerProcess.start(["--database", "sqlite:\(dataFolder)/db.sqlite"])
        kill(server.pid, SIGTERM)
        _ = await server.waitForExit(within: .seconds(5))
        let folderMode = try FileManager.default.attributesOfItem(atPath: dataFolder)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: "\(dataFolder)/db.sqlite")[.posixPermissions] as? Int
        #expect(folderMode == 0o700)
        #expect(fileMode == 0o600)
    }
}
