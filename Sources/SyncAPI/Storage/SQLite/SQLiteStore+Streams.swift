import GRDB

/// Full lists read page by page from one WAL snapshot, so that an answer of 100,000 items never sits whole in memory.
extension SQLiteStore {
    public var isInReadSnapshot: Bool { pinned != nil }

    public func streamLiveRows(
        familyID: String, collection: String, start: @escaping @Sendable (Int64) async throws -> Void,
        page: @escaping @Sendable ([StoredItem]) async throws -> Void
    ) async throws {
        // A snapshot of its own: every page comes from the same state of the database as the counter.
        let snapshot = try Self.mapped { try pool.makeSnapshot() }
        try await start(try await Self.version(snapshot, familyID: familyID))
        try await Self.forEachLivePage(snapshot, familyID: familyID, collection: collection, page)
    }

    public func pinnedVersion(familyID: String) async throws -> Int64 {
        guard let pinned else { throw SyncError.unavailable }
        return try await Self.version(pinned, familyID: familyID)
    }

    public func forEachPinnedLivePage(familyID: String, collection: String, _ page: ([StoredItem]) async throws -> Void) async throws {
        guard let pinned else { throw SyncError.unavailable }
        try await Self.forEachLivePage(pinned, familyID: familyID, collection: collection, page)
    }

    /// The family's counter in `snapshot`.
    static func version(_ snapshot: DatabaseSnapshot, familyID: String) async throws -> Int64 {
        let version = try await read(snapshot) { db in
            try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID])
        }
        guard let version else { throw SyncError.unauthorized }
        return version
    }

    /// Every live row of a full list in `snapshot`, page by page; the next page is read once `page` returned.
    static func forEachLivePage(
        _ snapshot: DatabaseSnapshot, familyID: String, collection: String, _ page: ([StoredItem]) async throws -> Void
    ) async throws {
        var after: (version: Int64, id: String) = (0, "")
        while true {
            let rows = try await livePage(snapshot, familyID: familyID, collection: collection, after: after)
            guard let last = rows.last else { return }
            try await page(rows)
            guard rows.count == StreamPaging.pageSize else { return }
            after = (last.version, last.id)
        }
    }

    /// The next page of live rows after `after` (keyset order: version, then id).
    static func livePage(
        _ snapshot: DatabaseSnapshot, familyID: String, collection: String, after: (version: Int64, id: String)
    ) async throws -> [StoredItem] {
        try await read(snapshot) { db in
            try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT \(SQLiteItemStatements.columns) FROM items
                    WHERE family_id = ? AND collection = ? AND parent_id = '' AND NOT deleted AND (version, id) > (?, ?)
                    ORDER BY version, id LIMIT ?
                    """,
                arguments: [familyID, collection, after.version, after.id, StreamPaging.pageSize]
            ).map(SQLiteItemStatements.storedItem)
        }
    }

    private static func read<T: Sendable>(_ snapshot: DatabaseSnapshot, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await snapshot.read(body) } catch { throw mapped(error) }
    }
}
