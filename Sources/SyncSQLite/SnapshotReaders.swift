import GRDB
import SyncAPI
import Synchronization

/// Read-only connections that hold one WAL snapshot across several reads (a group's run of reads, a streamed full
/// list), kept open from one snapshot to the next.
///
/// Why: a `DatabaseSnapshot` opens a new SQLite connection every time (the file opened, its schema parsed, every
/// statement prepared anew) and closes it after. A connection here fixes its snapshot the way `DatabaseSnapshot` does
/// (a deferred transaction and a read of the schema), ends the transaction when it is given back, and waits, open, with
/// its prepared statements, for the next snapshot.
///
/// A connection is given back only out of its transaction: one whose transaction could not be ended is closed, so
/// that no kept connection holds an old snapshot (which would keep the WAL from being checkpointed past it).
final class SnapshotReaders: Sendable {
    private let free = Mutex<[DatabaseQueue]>([])
    private let path: String
    private let configuration: GRDB.Configuration
    /// How many idle connections are kept; a snapshot taken while none is idle opens one.
    let keep: Int

    init(path: String, keep: Int, configuration: GRDB.Configuration) {
        var configuration = configuration
        configuration.readonly = true
        // The snapshot's transaction spans several accesses, as `DatabaseSnapshot`'s does.
        configuration.allowsUnsafeTransactions = true
        self.path = path
        self.configuration = configuration
        self.keep = keep
    }

    /// Idle connections (for tests).
    var idle: Int { free.withLock { $0.count } }

    /// A connection inside a read transaction whose snapshot is fixed: `end` it when done.
    func begin() throws -> DatabaseQueue {
        let connection = try free.withLock({ $0.popLast() }) ?? DatabaseQueue(path: path, configuration: configuration)
        do {
            try connection.inDatabase { db in
                try db.beginTransaction(.deferred)
                try db.execute(sql: "SELECT rootpage FROM sqlite_master LIMIT 1")
            }
        } catch {
            end(connection)
            throw error
        }
        return connection
    }

    /// Ends the connection's transaction and keeps the connection for the next snapshot (when it left the
    /// transaction and fewer than `keep` are idle).
    func end(_ connection: DatabaseQueue) {
        let clean = connection.inDatabase { db -> Bool in
            if db.isInsideTransaction {
                do { try db.commit() } catch { try? db.rollback() }
            }
            return !db.isInsideTransaction
        }
        guard clean else { return }
        free.withLock { if $0.count < keep { $0.append(connection) } }
    }
}
