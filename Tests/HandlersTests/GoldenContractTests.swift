import Foundation
import SyncAPI
import TestSupport
import Testing

/// Runs every golden example of `docs/api/examples/` against a fresh server on each backend.
@Suite("Golden HTTP contract", .sharingTheMachine)
struct GoldenContractTests {
    static let cases: [(String, Backend)] = (try? GoldenScenario.all())?.flatMap { file in Backend.allCases.map { (file, $0) } } ?? []

    @Test("golden example", arguments: cases)
    func golden(file: String, backend: Backend) async throws {
        let scenario = try GoldenScenario(file: file)
        // UPDATE_GOLDEN=1 rewrites the answers from the SQLite run (then review the diff).
        let update = ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" && backend == .sqlite
        let problems = try await TestApp.run(backend) { client in try await scenario.run(client, update: update) }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test("the examples folder holds golden files")
    func examplesExist() throws {
        #expect(try GoldenScenario.all().count >= 5)
    }
}

/// No answer of any endpoint carries a secret (issue: accounts are public profiles, never hashes or tokens).
@Suite("Secret scan", .sharingTheMachine)
struct SecretScanTests {
    @Test("the scan flags hashes, token fields and password fields")
    func scannerWorks() throws {
        let leaky = try JSONParser.parse(
            #"{"id":"a","passwordHash":"x","nested":[{"value":"$2b$12$abcdefghijklmnopqrstuv"}],"tokenHash":"\#(String(repeating: "ab", count: 32))"}"#
        )
        #expect(SecretScan.findings(in: leaky, at: "t", grantsToken: false).count == 4)
        #expect(SecretScan.findings(in: try JSONParser.parse(#"{"token":"abc"}"#), at: "t", grantsToken: true).isEmpty)
    }
}
