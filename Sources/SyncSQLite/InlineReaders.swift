import GRDB
import SyncAPI
import Synchronization

/// Read-only connections on which a read runs on the calling thread when one is free, else nil (the caller then reads
/// through the pool).
///
/// Why: a read through `DatabasePool` hops from the request's task to the reader's queue and back, two thread wake-ups
/// per delta, whose kernel time and task switches are a large part of a SQLite delta's cost. A read here never waits
/// for a connection: taking one is a try, so no thread of the concurrency pool ever blocks waiting for a reader (a
/// synchronous read that waits for one can hang the server: `ReaderPoolTests`). Each read is its own transaction, a WAL
/// snapshot as in the pool.
///
/// What runs here holds a thread of the concurrency pool until it returns, so it must never wait for another task:
/// the store's read bodies are synchronous SQLite statements (`ConnectionThreadExecutor` runs the shared
/// orchestration's on this same thread, and nothing in it hops to an actor or another executor).
final class InlineReaders: Sendable {
    private let free: Mutex<[DatabaseQueue]>

    init(path: String, count: Int, configuration: GRDB.Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        free = Mutex(try (0..<count).map { _ in try DatabaseQueue(path: path, configuration: configuration) })
    }

    /// The read's result or error, or nil when every connection is taken.
    func tryRead<T>(_ body: (Database) throws -> T) -> Result<T, any Error>? {
        guard let connection = free.withLock({ $0.popLast() }) else { return nil }
        defer { free.withLock { $0.append(connection) } }
        return Result { try connection.read(body) }
    }
}
