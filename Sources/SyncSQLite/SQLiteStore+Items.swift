import GRDB
import SyncAPI

/// SQLite as an item executor: the shared orchestration runs on the GRDB connection's own thread
/// (`ConnectionThreadExecutor`), in the single writer's transaction or in a WAL snapshot.
extension SQLiteStore: ItemExecutor {
    package func inWriteTransaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteItemStatements) async throws -> T) async throws -> T {
        try await write { db in
            let statements = SQLiteItemStatements(db: db)
            return try ConnectionThreadExecutor.run { try await body(statements) }
        }
    }

    package func inSnapshot<T: Sendable>(_ body: @escaping @Sendable (SQLiteItemStatements) async throws -> T) async throws -> T {
        try await read { db in
            let statements = SQLiteItemStatements(db: db)
            return try ConnectionThreadExecutor.run { try await body(statements) }
        }
    }

    /// A GRDB read is a transaction already: the same as a snapshot.
    package func inSingleStatement<T: Sendable>(_ body: @escaping @Sendable (SQLiteItemStatements) async throws -> T) async throws -> T {
        try await inSnapshot(body)
    }

    /// Straight on the reader's thread: one synchronous statement needs no task of `ConnectionThreadExecutor`.
    public func item(spaceID: String, key: ItemKey) async throws -> StoredItem? {
        try await read { db in try SQLiteItemStatements(db: db).item(spaceID: spaceID, key: key) }
    }

    public func forEachVerifyRow(
        spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void
    ) async throws -> SpaceCounter {
        try await readVerifyRows(spaceID: spaceID, collections: collections, each)
    }

    public func write(
        spaceID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        // Live streams learn of the change from the commit (`CommitNotices`).
        try await writeItem(spaceID: spaceID, key: key, parent: parent, nowMs: nowMs, plan: plan)
    }

    /// Straight on the reader's thread, in its WAL snapshot: the hottest read needs no task of
    /// `ConnectionThreadExecutor` (a task and a condition variable per delta).
    public func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await read { db in
            guard let delta = try SQLiteItemStatements(db: db).delta(spaceID: spaceID, collections: collections, since: since) else {
                throw SyncError.unauthorized
            }
            return delta
        }
    }

    public func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await readPageSync(spaceID: spaceID, query: query, since: since)
    }

    public func page(spaceID: String, query: PageQuery) async throws -> PageRows? {
        try await readPage(spaceID: spaceID, query: query)
    }
}
