import Foundation
import TestSupport

/// What the test PostgreSQL server logged while some work ran (a database of `newDatabaseURL(logStatements: true)`):
/// to prove how many statements a path costs, not how fast it ran.
enum StatementLog {
    /// Statements whose parameters name `familyID`, and transactions opened, in what the server logged during `body`.
    /// Other tests' statements may be logged meanwhile (the log is the server's): the family's id tells them apart.
    static func counted(naming familyID: String, during body: () async throws -> Void) async throws -> (statements: Int, transactions: Int) {
        let log = try await TestPostgres.shared.log()
        let before = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
        try await body()
        try await Task.sleep(for: .milliseconds(300))
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: log))
        try handle.seek(toOffset: UInt64(before))
        let lines = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n")
        return (
            lines.filter { $0.contains("parameters:") && $0.contains(familyID) }.count,
            lines.filter { $0.contains("BEGIN") || $0.contains("START TRANSACTION") }.count
        )
    }
}
