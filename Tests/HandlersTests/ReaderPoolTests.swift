import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// Many reads at once against SQLite's few reader connections: no thread of the Swift concurrency pool may wait for
/// a reader. GRDB gives a reader back on the concurrency pool when an async read resumes, so a synchronous read
/// there waits for a reader that only that pool can give back: with every thread of the pool blocked so, the process
/// hangs (a release build did, 2026-11-25, under `bench/run` with 1,000 families, until `readHere` was reverted).
@Suite("SQLite readers under many concurrent reads", .sharingTheMachine)
struct ReaderPoolTests {
    @Test("300 concurrent deltas, item reads, page syncs and full lists all finish, none 5xx", .timeLimit(.minutes(10)))
    func manyReads() async throws {
        // Budgets high enough that every request is answered: this test is about threads, not admission.
        let budgets: (inout AppConfiguration) -> Void = {
            $0.maxSnapshotAnswersPerAccount = 1000
            $0.maxSnapshotAnswersPerInstance = 1000
        }
        try await TestApp.run(.sqlite, configure: budgets) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await api.call(.put, "/api/v1/threads/t1", body: #"{"title":"T"}"#).status == .ok)
            for m in 0..<5 {
                #expect(try await api.call(.put, "/api/v1/threads/t1/messages/m\(m)", body: #"{"text":"hi"}"#).status == .ok)
            }
            for n in 0..<20 {
                #expect(try await api.call(.put, "/api/v1/contacts/c\(n)", body: #"{"firstName":"C\#(n)"}"#).status == .ok)
            }
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            #expect(try await api.call(.put, "/api/v1/contacts/c0", body: #"{"firstName":"Changed"}"#).status == .ok)
            // Deltas since a date and item reads (the hottest reads), page syncs (async reads of the pool), full lists.
            let paths = [
                "/api/v1/ctcsync?date=\(date)", "/api/v1/contacts/c1", "/api/v1/msgsyncthread?maxmessages=5", "/api/v1/ctcsync",
            ]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<300 {
                    let path = paths[n % paths.count]
                    group.addTask { try await api.call(.get, path).status.code }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            print("reader pool: 300 concurrent reads → \(statuses)")
            #expect(statuses == [200: 300])
        }
    }
}
