import Foundation
import GRDB

/// The local copy of a family's data: a SQLite file (GRDB `DatabasePool`, WAL) holding each item as the server last
/// sent it (the base version), the unsent local edit on top of it, the date of sync, the `nomore` flags, the queue of
/// writes to push and the writes the server refused.
///
/// Every change the SDK makes to it is one transaction: a pulled answer with its new date, or a local edit with its
/// queue entry, so a crash never leaves it half-applied.
public final class Replica: Sendable {
    /// The database; apps may read it (observations, their own queries on `items`), never write it.
    public let pool: DatabasePool

    /// Opens (creating if needed) and migrates the replica at `path`. The file and its WAL companions are readable by
    /// their owner only (0600: they hold every record of the family), and on Apple platforms
    /// protected until the device is first unlocked.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // No checkpoint inside a commit: a first sync's commit would copy its whole replica (36 MiB for 100,000
        // contacts) into the database file before `sync()` returns. `checkpointSoon()` does it after, off the caller.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            // The temporary database (where an answer read inside its apply gathers a replaced list, `StagingArea`)
            // gives its pages back at each commit: its file lives as long as the connection, and would otherwise keep
            // the size of the largest list.
            try db.execute(sql: "PRAGMA temp.auto_vacuum = FULL")
        }
        // Created 0600 from the start (SQLite gives the -wal and -shm files the database file's mode): no moment where
        // another user could open it, and no process-wide umask change.
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        for file in [path, path + "-wal", path + "-shm"] { chmod(file, 0o600) }
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try? FileManager.default.setAttributes(
            [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: path)
        #endif
        try Self.migrator.migrate(pool)
        checkpointSoon()
    }

    /// Copies the WAL into the database file in the background (passive: readers go on; the next write waits for
    /// it). Run after every sync and push, and at open, since commits no longer checkpoint by themselves.
    func checkpointSoon() {
        let pool = self.pool
        Task.detached(priority: .utility) { try? await pool.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) } }
    }
}
