import PostgresNIO
import SyncAPI

/// PostgreSQL as an item executor: statements on a pooled connection, inside the request's deadline, retried after a
/// serialization failure or a deadlock (`guarded`). The orchestration is the shared one.
extension PostgresStore: ItemExecutor {
    package func inWriteTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresItemStatements) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await guarded { budget in
            try await transaction(under: budget) { conn in
                try await body(PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements))
            }
        }
    }

    package func inSnapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresItemStatements) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await guarded { _ in
            try await snapshotRead { conn in try await body(PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements)) }
        }
    }

    package func inSingleStatement<T: Sendable>(_ body: @escaping @Sendable (PostgresItemStatements) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await guarded { _ in
            try await read { conn in try await body(PostgresItemStatements(conn: conn, logger: logger, prepared: usesPreparedStatements)) }
        }
    }

    public func item(spaceID: String, key: ItemKey) async throws -> StoredItem? {
        try await readItem(spaceID: spaceID, key: key)
    }

    public func forEachVerifyRow(
        spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void
    ) async throws -> SpaceCounter {
        try await readVerifyRows(spaceID: spaceID, collections: collections, each)
    }

    public func write(
        spaceID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        // Writes notify their family's channel in their own transaction (`PostgresItemStatements.store`).
        try await writeItem(spaceID: spaceID, key: key, parent: parent, nowMs: nowMs, plan: plan)
    }

    public func delta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta {
        if !prefetched.isEmpty, let delta = prefetched[DeltaRequest(spaceID: spaceID, collections: collections, since: since)] {
            return delta
        }
        // On a pinned snapshot, its own statement; else read with whatever other deltas wait (`DeltaBatcher`).
        guard pinned == nil else { return try await readDelta(spaceID: spaceID, collections: collections, since: since) }
        let (batcher, prepared) = (deltaBatcher, usesPreparedStatements)
        let call = DeltaRequest(spaceID: spaceID, collections: collections, since: since)
        guard let delta = try await guarded({ _ in try await batcher.delta(call, prepared: prepared) }) else { throw SyncError.unauthorized }
        return delta
    }

    /// One statement (`PostgresPageStatements.swift`), not the shared orchestration's several.
    public func pageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await inSingleStatement { statements in
            guard let rows = try await statements.pageSync(spaceID: spaceID, query: query, since: since) else {
                throw SyncError.unauthorized
            }
            return rows
        }
    }

    /// One statement (`PostgresPageStatements.swift`).
    public func page(spaceID: String, query: PageQuery) async throws -> PageRows? {
        try await inSingleStatement { try await $0.page(spaceID: spaceID, query: query) }
    }
}
