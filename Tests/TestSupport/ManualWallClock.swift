import SyncAPI
import Synchronization

/// A wall clock in milliseconds since 1970 that a test moves, for an application's `clock`: time passes when the
/// test says so, never by waiting for it.
public final class ManualWallClock: Sendable {
    private let value: Mutex<Int64>

    public init(startingAt ms: Int64 = WallClock.nowMs()) {
        value = Mutex(ms)
    }

    public func now() -> Int64 { value.withLock { $0 } }

    /// Moves the clock `ms` ahead; answers its new time.
    @discardableResult
    public func advance(byMs ms: Int64) -> Int64 {
        value.withLock { now in
            now += ms
            return now
        }
    }
}
