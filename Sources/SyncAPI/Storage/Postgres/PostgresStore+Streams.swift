import Logging
import PostgresNIO

/// Full lists read from a cursor, page by page, so that an answer of 100,000 items never sits whole in memory.
extension PostgresStore {
    public var isInReadSnapshot: Bool { pinned != nil }

    public func streamLiveRows(
        familyID: String, collection: String, start: @escaping @Sendable (Int64) async throws -> Void,
        page: @escaping @Sendable ([StoredItem]) async throws -> Void
    ) async throws {
        do {
            try await transaction(readOnlySnapshot: true) { conn in
                try await start(try await version(on: conn, familyID: familyID))
                try await forEachLivePage(on: conn, familyID: familyID, collection: collection, page)
            }
        } catch {
            throw PostgresFailure(error).domainError(for: error, logger: logger)
        }
    }

    public func pinnedVersion(familyID: String) async throws -> Int64 {
        guard let pinned else { throw SyncError.unavailable }
        return try await guarded { try await version(on: pinned, familyID: familyID) }
    }

    public func forEachPinnedLivePage(familyID: String, collection: String, _ page: ([StoredItem]) async throws -> Void) async throws {
        guard let pinned else { throw SyncError.unavailable }
        do {
            try await forEachLivePage(on: pinned, familyID: familyID, collection: collection, page)
        } catch {
            throw PostgresFailure(error).domainError(for: error, logger: logger)
        }
    }

    /// The family's counter, read on `conn`.
    func version(on conn: PostgresConnection, familyID: String) async throws -> Int64 {
        for try await version in try await conn.query("SELECT version FROM families WHERE id = \(familyID)", logger: logger)
            .decode(Int64.self)
        {
            return version
        }
        throw SyncError.unauthorized
    }

    /// Every live row of a full list, read on `conn` page by page, oldest change first. PostgresNIO reads rows from
    /// the socket as they are consumed: the cursor moves at the client's pace.
    func forEachLivePage(
        on conn: PostgresConnection, familyID: String, collection: String, _ page: ([StoredItem]) async throws -> Void
    ) async throws {
        let rows = try await conn.query(
            """
            SELECT \(unescaped: PostgresItemStatements.columns) FROM items
            WHERE family_id = \(familyID) AND collection = \(collection) AND parent_id = '' AND NOT deleted
            ORDER BY version, id
            """, logger: logger)
        var batch: [StoredItem] = []
        batch.reserveCapacity(StreamPaging.pageSize)
        for try await columns in rows.decode(PostgresItemStatements.ItemColumns.self) {
            batch.append(PostgresItemStatements.storedItem(columns))
            if batch.count == StreamPaging.pageSize {
                try await page(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await page(batch) }
    }
}
