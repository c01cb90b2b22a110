import PostgresNIO
import SyncAPI

/// A snapshot pinned by `PostgresStore.withReadSnapshot`: one connection inside a REPEATABLE READ transaction, which
/// every read of it uses; the deltas a group's run will ask for may be read ahead on it, in one statement.
struct PostgresSnapshot: PinnedStoreSnapshot {
    /// The store whose reads run on `connection` (its `pinned`), with the deltas read ahead (`prefetched`).
    private(set) var store: PostgresStore
    let connection: PostgresConnection

    init(store: PostgresStore, connection: PostgresConnection) {
        var pinned = store
        pinned.pinned = connection
        self.store = pinned
        self.connection = connection
    }

    func counter(spaceID: String) async throws -> SpaceCounter {
        let (store, connection) = (self.store, self.connection)
        return try await store.guarded { _ in try await store.counter(on: connection, spaceID: spaceID) }
    }

    func forEachLivePage(spaceID: String, collection: String, _ page: (LiveBodies) async throws -> Void) async throws {
        do {
            try await store.forEachLivePage(on: connection, spaceID: spaceID, collection: collection, page)
        } catch {
            throw PostgresFailure(error).domainError(for: error, logger: store.logger)
        }
    }

    var prefetchesDeltas: Bool { true }

    /// Reads the answers of several `delta` calls of one family in one statement (`PostgresStore.deltas`). For fewer
    /// than two calls, for calls of several families, or when they change more than `prefetchRowLimit` rows, the
    /// snapshot as it is.
    func prefetchingDeltas(_ requests: [DeltaRequest]) async throws -> any SnapshotReads {
        var seen = Set<DeltaRequest>()
        let requests = requests.filter { seen.insert($0).inserted }
        guard requests.count >= 2, let spaceID = requests.first?.spaceID, requests.allSatisfy({ $0.spaceID == spaceID }) else {
            return self
        }
        let (connection, logger, prepared) = (self.connection, store.logger, store.usesPreparedStatements)
        let deltas = try await store.guarded { _ in
            try await PostgresStore.deltas(
                of: requests, spaceID: spaceID, limit: PostgresStore.prefetchRowLimit, conn: connection, prepared: prepared, logger: logger)
        }
        guard let deltas else { return self }
        var snapshot = self
        snapshot.store.prefetched = deltas
        return snapshot
    }
}
