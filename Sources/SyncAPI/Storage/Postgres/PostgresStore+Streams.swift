import Logging
import PostgresNIO

/// Full lists read page by page as the rows arrive, so that an answer of 100,000 items never sits whole in memory.
extension PostgresStore {
    public var isInReadSnapshot: Bool { pinned != nil }

    public func streamLiveRows(
        familyID: String, collection: String, start: @escaping @Sendable (Int64) async throws -> Void,
        page: @escaping @Sendable ([StoredItem]) async throws -> Void
    ) async throws {
        // One statement: the counter rides on every row (a join to the family's row), so it comes from the same
        // snapshot as the rows, with no transaction around them (issue 19: it was BEGIN, SET TRANSACTION, the counter,
        // the rows and COMMIT, five round trips). PostgresNIO reads rows from the socket as they are consumed.
        do {
            try await answersClient.withConnection { conn in
                let rows = try await conn.query(
                    """
                    SELECT f.version, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
                    FROM families f
                    LEFT JOIN items i ON i.family_id = f.id AND i.collection = \(collection) AND i.parent_id = '' AND NOT i.deleted
                    WHERE f.id = \(familyID)
                    ORDER BY i.version, i.id
                    """, logger: logger)
                var started = false
                var batch: [StoredItem] = []
                batch.reserveCapacity(StreamPaging.pageSize)
                for try await row in rows {
                    var r = ColumnReader(row)
                    let version: Int64 = try r.next()
                    let id: String? = try r.next()
                    let iv: Int64? = try r.next()
                    let deleted: Bool? = try r.next()
                    let body: String? = try r.next()
                    let sortMs: Int64? = try r.next()
                    let sortVersion: Int64? = try r.next()
                    let tag: String? = try r.next()
                    if !started {
                        started = true
                        try await start(version)
                    }
                    guard let id, let iv else { continue }
                    batch.append(
                        StoredItem(id: id, version: iv, deleted: deleted ?? false, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag))
                    if batch.count == StreamPaging.pageSize {
                        try await page(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                guard started else { throw SyncError.unauthorized }
                if !batch.isEmpty { try await page(batch) }
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
        for try await row in rows {
            batch.append(try PostgresItemStatements.storedItem(row))
            if batch.count == StreamPaging.pageSize {
                try await page(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await page(batch) }
    }
}
