import Foundation
import Testing

/// How many tests run at once. Swift Testing starts every test of the run together (200 of 203 were in flight at
/// once here): on a loaded 2-core machine each then waits so long for a core that servers answer 503 past their
/// own database deadline, and tests fail without anything being wrong. Every suite takes `.sharingTheMachine`, so
/// at most `width` test cases run at a time; the rest wait their turn before they start any fixture.
public actor TestSlots {
    public static let shared = TestSlots(width: TestSlots.defaultWidth)

    /// Three tests per core (most wait on a database or a socket most of the time), at least 4;
    /// `SYNCAPI_TEST_WIDTH` overrides it.
    public static var defaultWidth: Int {
        if let text = ProcessInfo.processInfo.environment["SYNCAPI_TEST_WIDTH"], let width = Int(text), width > 0 { return width }
        return max(4, 3 * ProcessInfo.processInfo.activeProcessorCount)
    }

    private let width: Int
    private var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { self.width = width }

    /// True inside a slot: a test case that inherits the trait twice (nested suites) takes one slot, not two.
    @TaskLocal static var holdsSlot = false

    /// Runs `body` once a slot is free.
    public nonisolated func run(_ body: @Sendable () async throws -> Void) async throws {
        if Self.holdsSlot { return try await body() }
        await acquire()
        do {
            try await Self.$holdsSlot.withValue(true) { try await body() }
        } catch {
            await release()
            throw error
        }
        await release()
    }

    private func acquire() async {
        if running < width {
            running += 1
            return
        }
        // The slot is handed over by `release()`: `running` stays counted for the waiter.
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty {
            running -= 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}

/// The trait every suite carries: each of its test cases runs in a slot of `TestSlots.shared`.
public struct SharingTheMachine: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Each test case on its own: never the suite (it would hold a slot while its tests wait for others).
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Once in its slot, a step of its own for HangWatch: a test that never ends is named, with where it is
        // declared, whatever it waits for.
        let name = "test \(test.name) (\(test.sourceLocation.fileName):\(test.sourceLocation.line))"
        try await TestSlots.shared.run { try await HangWatch.step(name) { try await function() } }
    }
}

extension Trait where Self == SharingTheMachine {
    /// Runs each test case of the suite in a slot of `TestSlots.shared` (at most a few tests at once).
    public static var sharingTheMachine: Self { SharingTheMachine() }
}
