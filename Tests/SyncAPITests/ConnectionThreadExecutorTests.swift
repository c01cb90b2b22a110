import Foundation
import TestSupport
import Testing

@testable import SyncAPI
@testable import SyncSQLite

/// The bridge that lets the shared `async` orchestration use a GRDB connection: the code runs on the calling thread
/// (the connection's queue), to its end, whatever it awaits.
@Suite("Connection thread executor", .sharingTheMachine)
struct ConnectionThreadExecutorTests {
    /// Something to await that lives on another executor.
    actor Counter {
        var value = 0
        func increment() -> Int {
            value += 1
            return value
        }
    }

    /// Runs `body` on a thread of its own, as GRDB runs an access closure on the connection's queue.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    @Test("the code runs on the calling thread, hops to an actor and back, and its value is returned")
    func runsHere() async throws {
        let counter = Counter()
        let outcome = await Self.onThread {
            let caller = pthread_self()
            return Result {
                try ConnectionThreadExecutor.run {
                    let before = pthread_equal(pthread_self(), caller) != 0
                    var total = 0
                    for _ in 0..<100 { total = await counter.increment() }
                    try await Task.sleep(for: .milliseconds(5))
                    let after = pthread_equal(pthread_self(), caller) != 0
                    return [before, after, total == 100]
                }
            }
        }
        #expect(try outcome.get() == [true, true, true])
    }

    @Test("an error thrown by the code is thrown by run, after the code ended")
    func throwsItsError() async {
        let outcome = await Self.onThread {
            Result {
                try ConnectionThreadExecutor<Int>.run {
                    try await Task.sleep(for: .milliseconds(5))
                    throw SyncError.unavailable
                }
            }
        }
        #expect(throws: SyncError.self) { try outcome.get() }
    }

    @Test("child tasks of the code finish before run returns")
    func childTasks() async throws {
        let outcome = await Self.onThread {
            Result {
                try ConnectionThreadExecutor.run {
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for i in 1...20 {
                            group.addTask {
                                try await Task.sleep(for: .milliseconds(Int64(i % 5)))
                                return i
                            }
                        }
                        return try await group.reduce(0, +)
                    }
                }
            }
        }
        #expect(try outcome.get() == 210)
    }
}
