import GRDB
import SyncAPI
import Synchronization

/// Tells the hub of every space whose version a committed transaction raised: the SQLite counterpart of the `pg_notify`
/// in PostgreSQL's version bump. It watches `families.version` on the single writer, so no write path sends a notice of
/// its own, every path that raises a version sends one, and a transaction that rolls back sends none.
final class CommitNotices: TransactionObserver, Sendable {
    private let hub: ChangeHub
    /// Rows of `families` whose version the open transaction raised (only the writer's thread touches it).
    private let raised = Mutex<Set<Int64>>([])

    init(hub: ChangeHub) {
        self.hub = hub
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        guard case .update(let table, let columns) = eventKind else { return false }
        return table == "families" && columns.contains("version")
    }

    func databaseDidChange(with event: DatabaseEvent) {
        let rowID = event.rowID
        raised.withLock { _ = $0.insert(rowID) }
    }

    func databaseDidCommit(_ db: Database) {
        let rowIDs = raised.withLock { raised in
            defer { raised = [] }
            return raised
        }
        for rowID in rowIDs {
            // Still the writer's turn: no other transaction in between, so this is the version just committed.
            do {
                guard
                    let row = try Row.fetchOne(cached: db, sql: "SELECT id, version FROM families WHERE rowid = ?", arguments: [rowID])
                else { continue }
                hub.notify(family: row[0], version: row[1])
            } catch {
                // The streams re-read what they need: waking every one is always correct.
                hub.notifyAll()
                return
            }
        }
    }

    func databaseDidRollback(_ db: Database) {
        raised.withLock { $0 = [] }
    }
}
