import Foundation
import SyncAPI
import TestSupport
import Testing

/// Media through the real process (protocol §10): a 100 MB upload with flat server memory, and a crash in the middle
/// of an upload that leaves nothing visible, on both backends.
@Suite("Media in the syncapi process", .sharingTheMachine)
struct MediaProcessTests {
    /// The server's peak resident memory so far, in bytes (VmHWM).
    static func peakMemory(_ pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { throw TestFailure("no VmHWM") }
        return kilobytes * 1024
    }

    /// A JPEG-signed file of `megabytes` MiB; returns its path.
    static func bigFile(_ folder: String, megabytes: Int) throws -> String {
        let path = "\(folder)/big.jpg"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        for n in 0..<megabytes {
            for i in stride(from: 0, to: block.count, by: 4096) { block[i] = UInt8(truncatingIfNeeded: n &+ i) }
            if n == 0 { block.replaceSubrange(0..<4, with: [0xFF, 0xD8, 0xFF, 0xE0]) }
            try handle.write(contentsOf: Data(block))
        }
        return path
    }

    static func database(_ backend: Backend, _ folder: String) async throws -> String {
        switch backend {
        case .sqlite: return "sqlite:\(folder)/data/db.sqlite"
        case .postgres: return try await TestPostgres.shared.newDatabaseURL()
        }
    }

    /// Waits (up to 60 s) until an upload in progress has stored at least `bytes`: in a temporary file (SQLite), in
    /// chunk rows, each committed as it comes (PostgreSQL). False if it never had.
    static func uploadStored(atLeast bytes: Int, _ backend: Backend, database: String, folder: String) async -> Bool {
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end, !Task.isCancelled {
            switch backend {
            case .sqlite:
                let tmp = "\(folder)/data/media/tmp"
                let sizes = ((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []).compactMap {
                    (try? FileManager.default.attributesOfItem(atPath: "\(tmp)/\($0)"))?[.size] as? Int
                }
                if sizes.contains(where: { $0 >= bytes }) { return true }
            case .postgres:
                guard case .postgres(let host, let port, _, _, let name, _)? = try? DatabaseURL(parsing: database) else {
                    return false
                }
                let query = "SELECT coalesce(sum(length(data)), 0) FROM media_chunks"
                let psql = ["psql", "-h", host, "-p", "\(port)", "-U", "postgres", "-d", name, "-Atc", query]
                let output = (try? await TestPostgres.run(psql))?.trimmingCharacters(in: .whitespacesAndNewlines)
                if let output, let stored = Int(output), stored >= bytes { return true }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("a 100 MB upload and its download leave the server's memory flat", arguments: Backend.allCases)
    func bigUpload(backend: Backend) async throws {
        try await HeavyTestGate.shared.run {
            let folder = try ProcessTests.temporaryFolder()
            let file = try Self.bigFile(folder, megabytes: 100)
            let expected = try await TestPostgres.run(["sha256sum", file]).split(separator: " ")[0]
            let server = try await ServerProcess.start([
                "--database", try await Self.database(backend, folder), "--media-max-bytes", "\(110 << 20)",
            ])
            defer {
                server.killAndReap()
            }
            let base = "http://localhost:\(server.port)"
            let auth = ["-H", "Authorization: Bearer \(try await Curl.signup(base))"]
            _ = try await Curl.call(auth + ["\(base)/api/v1/ctcsync"])
            let before = try Self.peakMemory(server.pid)
            let uploaded = try await Curl.call(auth + ["-X", "POST", "-H", "Content-Type: image/jpeg", "-T", file, "\(base)/api/v1/media"])
            #expect(uploaded.status == 201, "\(uploaded.body)")
            #expect(SyncAPITestJSON.string(uploaded.body, "sha256") == String(expected))
            let download = "\(folder)/download.jpg"
            let got = try await TestPostgres.run(
                ["curl", "-s", "-o", download, "-w", "%{http_code}"] + auth + ["\(base)/api/v1/media/\(expected)"])
            #expect(got == "200")
            #expect(try await TestPostgres.run(["sha256sum", download]).split(separator: " ")[0] == expected)
            let growth = try Self.peakMemory(server.pid) - before
            #expect(growth <= 32 << 20, "peak memory grew \(growth >> 20) MiB")
            print("media \(backend): 100 MiB up and down, server peak memory grew \(growth >> 10) KiB")
        }
    }

    @Test("a crash in the middle of an upload leaves nothing visible", arguments: Backend.allCases)
    func crashMidUpload(backend: Backend) async throws {
        try await HeavyTestGate.shared.run {
            let folder = try ProcessTests.temporaryFolder()
            let file = try Self.bigFile(folder, megabytes: 8)
            let sha = String(try await TestPostgres.run(["sha256sum", file]).split(separator: " ")[0])
            let database = try await Self.database(backend, folder)
            let server = try await ServerProcess.start(["--database", database])
            let base = "http://localhost:\(server.port)"
            let token = try await Curl.signup(base)
            let auth = ["-H", "Authorization: Bearer \(token)"]
            let upload = try ServerProcess.spawn(
                ["curl", "-s", "--limit-rate", "1M", "-X", "POST", "-H", "Content-Type: image/jpeg", "-T", file] + auth + [
                    "\(base)/api/v1/media"
                ], output: "\(folder)/upload.log")
            // The kill comes once part of the upload is stored (1 MiB of the 8, an 8 s upload at 1 MB/s): waited for,
            // not slept on.
            let underWay = await Self.uploadStored(atLeast: 1 << 20, backend, database: database, folder: folder)
            server.killAndReap()
            #expect(underWay, "no part of the upload was stored within 60 s")
            _ = await ServerProcess(pid: upload, port: 0, log: "").waitForExit(within: .seconds(10))
            let restarted = try await ServerProcess.start(["--database", database])
            defer {
                restarted.killAndReap()
            }
            let answer = try await Curl.call(auth + ["http://localhost:\(restarted.port)/api/v1/media/\(sha)"])
            #expect(answer.status == 404)
            if backend == .sqlite {
                // Only the temporary file may remain, never a file under a final name.
                let media = "\(folder)/data/media"
                // The upload was under way when the kill came: part of it sits in a temporary file.
                let partial = try FileManager.default.contentsOfDirectory(atPath: "\(media)/tmp").compactMap {
                    try FileManager.default.attributesOfItem(atPath: "\(media)/tmp/\($0)")[.size] as? Int
                }
                #expect(partial.contains { $0 > 0 && $0 < 8 << 20 }, "\(partial)")
                let families = try FileManager.default.contentsOfDirectory(atPath: media).filter { $0 != "tmp" }
                for family in families { #expect(try FileManager.default.contentsOfDirectory(atPath: "\(media)/\(family)").isEmpty) }
            }
        }
    }
}
