import Foundation
import Synchronization

/// Names what a test run waits for when it waits too long: every harness step (a server starting, a test body, a
/// request) registers while it runs, and a watcher thread prints, once, each step still running after
/// `reportAfter`. The whole suite has hung three times on a loaded machine, every thread idle, with no query in
/// PostgreSQL and nothing to say where; the next time, the log says which step of which test it was.
public enum HangWatch {
    /// How long a step runs before it is reported (the slowest tests' steps take under a minute).
    public static let reportAfter: Duration = .seconds(150)

    private struct Step {
        let name: String
        let started: ContinuousClock.Instant
        var reported = false
    }

    private static let steps = Mutex<(next: Int, running: [Int: Step], watching: Bool)>((0, [:], false))

    /// Runs `body` as a step named `name`.
    public static func step<T>(_ name: @autoclosure () -> String, _ body: () async throws -> T) async rethrows -> T {
        let id = begin(name())
        defer { end(id) }
        return try await body()
    }

    /// Registers a step; `end` it when it is over.
    public static func begin(_ name: String) -> Int {
        let (id, startWatching) = steps.withLock { state -> (Int, Bool) in
            state.next += 1
            state.running[state.next] = Step(name: name, started: .now)
            defer { state.watching = true }
            return (state.next, !state.watching)
        }
        if startWatching { Thread { watch() }.start() }
        return id
    }

    public static func end(_ id: Int) {
        _ = steps.withLock { $0.running.removeValue(forKey: id) }
    }

    /// On a thread of its own: the test's tasks may all be stuck.
    private static func watch() {
        while true {
            Thread.sleep(forTimeInterval: 10)
            for (name, age) in late(at: .now, after: reportAfter) {
                FileHandle.standardError.write(Data("HangWatch: still running after \(age.components.seconds) s: \(name)\n".utf8))
            }
        }
    }

    /// The steps running for more than `after` at `now` that were not reported yet, marked reported.
    public static func late(at now: ContinuousClock.Instant, after: Duration) -> [(name: String, age: Duration)] {
        steps.withLock { state in
            var late: [(name: String, age: Duration)] = []
            for (id, step) in state.running where !step.reported && now - step.started > after {
                state.running[id]?.reported = true
                late.append((step.name, now - step.started))
            }
            return late
        }
    }
}
