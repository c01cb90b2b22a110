import Foundation
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// The application stops at once while a streamed list's statement gets no answer. Its producer runs in the
/// `AnswerProducers` service, which waits for its producers when the application stops, and PostgresNIO's statements do
/// not end on cancellation: a statement written to a connection the server had just closed (an outage) was never
/// answered, and the application's shutdown waited for it for good (seen in `OutageTests`). Here the statement waits
/// for a table lock instead, for as long as the test holds it.
@Suite("Stopping during a streamed list", .sharingTheMachine)
struct StreamShutdownTests {
    @Test("the application stops while a streamed list's statement waits in the database")
    func stopsWhileStatementWaits() async throws {
        var configuration = try await TestApp.configuration(.postgres)
        configuration.databaseDeadline = .seconds(2)
        configuration.requestTimeLimit = .seconds(3)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let app = try await buildApplication(configuration, logger: logger)
        let lock = TableLock(database: configuration.database, table: "items")
        let (signedUp, signUpDone) = AsyncStream<Void>.makeStream()
        let (locked, lockTaken) = AsyncStream<Void>.makeStream()
        let (waiting, statementWaits) = AsyncStream<Void>.makeStream()
        let run = Task {
            try await app.test(.router) { client in
                let api = try await APIClient.signedUp(client)
                signUpDone.finish()
                for await _ in locked {}
                // The list's statement waits for the lock: no date within the database deadline, a 503, and its
                // producer is cancelled with its answer.
                let answer = try await api.call(.get, "/api/v1/ctcsync")
                #expect(answer.status == .serviceUnavailable)
                for await _ in waiting {}
            }
        }
        for await _ in signedUp {}
        let stopped = try await lock.holding {
            lockTaken.finish()
            try await lock.waitForWaiter()
            statementWaits.finish()
            // The application's run ends (its shutdown with it) while the lock is still held. The limit only bounds a
            // failure: a shutdown takes well under a second.
            return await Self.ends(run, within: .seconds(120))
        }
        // Once the lock is gone the statement ends, and so does the application either way.
        try await run.value
        #expect(stopped, "the application's shutdown waited for the streamed list's statement")
    }

    /// True when `task` ends within `limit`, false when it has not ended by then (it is left running).
    static func ends(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        let first = Mutex<(continuation: CheckedContinuation<Bool, Never>?, result: Bool?)>((nil, nil))
        let resume: @Sendable (Bool) -> Void = { ended in
            let continuation = first.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard state.result == nil else { return nil }
                state.result = ended
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: ended)
        }
        Task {
            _ = await task.result
            resume(true)
        }
        let timer = Task {
            try await Task.sleep(for: limit)
            resume(false)
        }
        let ended = await withCheckedContinuation { continuation in
            let ready = first.withLock { state -> Bool? in
                if let result = state.result { return result }
                state.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        timer.cancel()
        return ended
    }
}
