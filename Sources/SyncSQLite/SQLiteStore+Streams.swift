import GRDB
import NIOCore
import SyncAPI

/// Full lists read page by page from one WAL snapshot, so that an answer of 100,000 items never sits whole in memory.
extension SQLiteStore {
    public func streamLiveRows(
        spaceID: String, collection: String, start: @escaping @Sendable (SpaceCounter) async throws -> Void,
        page: @escaping @Sendable (LiveBodies) async throws -> Void
    ) async throws {
        // A snapshot of its own: every page comes from the same state of the database as the counter.
        let snapshot = try Self.mapped { try snapshots.begin() }
        defer { snapshots.end(snapshot) }
        try await start(SpaceCounter(version: try await Self.version(snapshot, spaceID: spaceID)))
        try await Self.forEachLivePage(snapshot, spaceID: spaceID, collection: collection, page)
    }

    /// The family's counter in `snapshot` (on SQLite, always on the database's first history: `SpaceLineage.original`).
    static func version(_ snapshot: DatabaseQueue, spaceID: String) async throws -> Int64 {
        let version = try await read(snapshot) { db in
            try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [spaceID])
        }
        guard let version else { throw SyncError.unauthorized }
        return version
    }

    /// The body of every live row of a full list in `snapshot`, page by page; the next page is read once `page`
    /// returned.
    static func forEachLivePage(
        _ snapshot: DatabaseQueue, spaceID: String, collection: String, _ page: (LiveBodies) async throws -> Void
    ) async throws {
        var after: (version: Int64, id: String) = (0, "")
        while true {
            let (bodies, last) = try await livePage(snapshot, spaceID: spaceID, collection: collection, after: after)
            guard let last else { return }
            try await page(bodies)
            guard StreamPaging.isFull(count: bodies.count, bytes: bodies.reduce(0) { $0 + $1.readableBytes }) else { return }
            after = last
        }
    }

    /// The next page of live rows after `after` (keyset order: version, then id): their bodies, in one buffer that
    /// each body is a slice of, and the position of the last. A page bounded by bytes reads fewer rows than its `LIMIT`.
    static func livePage(
        _ snapshot: DatabaseQueue, spaceID: String, collection: String, after: (version: Int64, id: String)
    ) async throws -> (LiveBodies, (version: Int64, id: String)?) {
        try await read(snapshot) { db in
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT version, id, body FROM items
                        WHERE family_id = ? AND collection = ? AND parent_id = '' AND NOT deleted AND (version, id) > (?, ?)
                        ORDER BY version, id LIMIT ?
                        """),
                arguments: [spaceID, collection, after.version, after.id, StreamPaging.pageSize])
            var buffer = ByteBuffer()
            var ends: [Int] = []
            ends.reserveCapacity(StreamPaging.pageSize)
            var last: (version: Int64, id: String)?
            // Ends at `pageSize` rows or once `pageBytes` are read, whichever comes first.
            while !StreamPaging.isFull(count: ends.count, bytes: buffer.writerIndex), let row = try rows.next() {
                last = (row[0], row[1])
                let body: String? = row[2]
                buffer.writeString(body ?? "null")
                ends.append(buffer.writerIndex)
            }
            // Sliced once every body is written: a slice taken earlier would make the next write copy the buffer.
            var bodies = LiveBodies()
            bodies.reserveCapacity(ends.count)
            var start = 0
            for end in ends {
                bodies.append(buffer.getSlice(at: start, length: end - start) ?? ByteBuffer())
                start = end
            }
            return (bodies, last)
        }
    }

    private static func read<T: Sendable>(_ snapshot: DatabaseQueue, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await snapshot.read(body) } catch { throw mapped(error) }
    }
}
