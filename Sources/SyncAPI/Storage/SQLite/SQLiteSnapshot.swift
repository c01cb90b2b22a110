import GRDB

/// A snapshot pinned by `SQLiteStore.withReadSnapshot`: one connection of the snapshot readers inside its read
/// transaction, which every read of it uses (WAL: it sees the database as it was when the transaction began).
struct SQLiteSnapshot: SnapshotReads {
    /// The store whose reads run on `connection` (its `pinned`).
    let store: SQLiteStore
    let connection: DatabaseQueue

    init(store: SQLiteStore, connection: DatabaseQueue) {
        var pinned = store
        pinned.pinned = connection
        self.store = pinned
        self.connection = connection
    }

    func item(familyID: String, key: ItemKey) async throws -> StoredItem? { try await store.item(familyID: familyID, key: key) }
    func forEachVerifyRow(familyID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void) async throws -> Int64 {
        try await store.forEachVerifyRow(familyID: familyID, collections: collections, each)
    }
    func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await store.delta(familyID: familyID, collections: collections, since: since)
    }
    func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await store.pageSync(familyID: familyID, query: query, since: since)
    }
    func page(familyID: String, query: PageQuery) async throws -> PageRows? { try await store.page(familyID: familyID, query: query) }

    func version(familyID: String) async throws -> Int64 { try await SQLiteStore.version(connection, familyID: familyID) }

    func forEachLivePage(familyID: String, collection: String, _ page: (LiveBodies) async throws -> Void) async throws {
        try await SQLiteStore.forEachLivePage(connection, familyID: familyID, collection: collection, page)
    }
}
