import GRDB
import SyncAPI

/// A snapshot pinned by `SQLiteStore.withReadSnapshot`: one connection of the snapshot readers inside its read
/// transaction, which every read of it uses (WAL: it sees the database as it was when the transaction began).
struct SQLiteSnapshot: PinnedStoreSnapshot {
    /// The store whose reads run on `connection` (its `pinned`).
    let store: SQLiteStore
    let connection: DatabaseQueue

    init(store: SQLiteStore, connection: DatabaseQueue) {
        var pinned = store
        pinned.pinned = connection
        self.store = pinned
        self.connection = connection
    }

    func counter(spaceID: String) async throws -> SpaceCounter {
        SpaceCounter(version: try await SQLiteStore.version(connection, spaceID: spaceID))
    }

    func forEachLivePage(spaceID: String, collection: String, _ page: (LiveBodies) async throws -> Void) async throws {
        try await SQLiteStore.forEachLivePage(connection, spaceID: spaceID, collection: collection, page)
    }
}
