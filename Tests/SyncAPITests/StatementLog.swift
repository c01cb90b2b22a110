import Foundation
import SyncAPI
import TestSupport

/// What the test PostgreSQL server logged while some work ran (a database of `newDatabaseURL(logStatements: true)`):
/// to prove how many statements a path costs, not how fast it ran.
enum StatementLog {
    /// Statements of `database` whose parameters name `spaceID`, and transactions it opened, in what the server
    /// logged during `body`; read once a marker run after `body` is in the log (every line names its database, so
    /// other tests' statements are told apart).
    static func counted(
        database url: String, naming spaceID: String, during body: () async throws -> Void
    ) async throws -> (statements: Int, transactions: Int) {
        let database = String(url.split(separator: "/").last ?? "")
        let log = try await TestPostgres.shared.log()
        let before = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
        try await body()
        let marker = try await TestPostgres.shared.logMarker(database: database)
        let end = ContinuousClock.now + .seconds(60)
        while true {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: log))
            try handle.seek(toOffset: UInt64(before))
            let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            try handle.close()
            if text.contains(marker) {
                let lines = text.split(separator: "\n").filter { $0.hasPrefix("db:\(database):") }
                let mine = lines.prefix { !$0.contains(marker) }
                return (
                    mine.filter { $0.contains("parameters:") && $0.contains(spaceID) }.count,
                    mine.filter { $0.contains(": BEGIN") || $0.contains("START TRANSACTION") }.count
                )
            }
            guard ContinuousClock.now < end else { throw SyncError.unavailable }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
