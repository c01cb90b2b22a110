import Foundation

/// A value behind a lock, for state shared across tasks on every platform the SDK supports (`Mutex` needs iOS 18 and
/// macOS 15; the SDK and its test kit run from iOS 16 and macOS 13).
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
