import Logging
import PostgresNIO
import SyncAPI

/// Full lists read page by page as the rows arrive, so that an answer of 100,000 items never sits whole in memory.
extension PostgresStore {

    public func streamLiveRows(
        spaceID: String, collection: String, start: @escaping @Sendable (SpaceCounter) async throws -> Void,
        page: @escaping @Sendable (LiveBodies) async throws -> Void
    ) async throws {
        // Under a deadline of its own, as a run of reads (`withReadSnapshot`): a producer that is cancelled (its answer
        // cancelled, the application stopping) leaves at once, whatever its statement does. PostgresNIO's statements do
        // not end on cancellation, and one written to a connection whose channel the server has just closed is never
        // answered (PostgresNIO writes it with no promise, and NIO drops a write to a closed channel): the application's
        // shutdown would wait for such a producer for good after an outage.
        try await Deadline.run(within: Self.snapshotRunLimit, timers: timers) { [self] _ in
            try await readLiveRows(spaceID: spaceID, collection: collection, start: start, page: page)
        }
    }

    private func readLiveRows(
        spaceID: String, collection: String, start: @escaping @Sendable (SpaceCounter) async throws -> Void,
        page: @escaping @Sendable (LiveBodies) async throws -> Void
    ) async throws {
        // One statement: the counter rides on every row (a join to the family's row), so it comes from the same
        // snapshot as the rows, with no transaction around them (which would be BEGIN, SET TRANSACTION, the counter,
        // the rows and COMMIT: five round trips). PostgresNIO reads rows from the socket as they are consumed. Only
        // the body is read: a live row always has one, so a NULL body is the join's row of a family with no items.
        do {
            try await answersClient.withConnection { conn in
                let rows = try await conn.run(
                    PreparedStatements.LiveRows(spaceID: spaceID, collection: collection), prepared: usesPreparedStatements,
                    logger: logger)
                var started = false
                var bytes = 0
                var batch = LiveBodies()
                batch.reserveCapacity(StreamPaging.pageSize)
                for try await (version, lineage, body) in rows {
                    if !started {
                        started = true
                        try await start(SpaceCounter(version: version, lineage: SpaceLineage.read(lineage)))
                    }
                    guard let body else { continue }
                    batch.append(body)
                    bytes += body.readableBytes
                    if StreamPaging.isFull(count: batch.count, bytes: bytes) {
                        try await page(batch)
                        batch.removeAll(keepingCapacity: true)
                        bytes = 0
                    }
                }
                guard started else { throw SyncError.unauthorized }
                if !batch.isEmpty { try await page(batch) }
            }
        } catch {
            throw PostgresFailure(error).domainError(for: error, logger: logger)
        }
    }

    /// The family's counter and line, read on `conn`.
    func counter(on conn: PostgresConnection, spaceID: String) async throws -> SpaceCounter {
        for try await (version, lineage) in try await conn.statement(
            "SELECT version, \(unescaped: SpaceLineage.column("families")) FROM families WHERE id = \(spaceID)", logger: logger
        ).decode((Int64, String?).self) {
            return SpaceCounter(version: version, lineage: SpaceLineage.read(lineage))
        }
        throw SyncError.unauthorized
    }

    /// The body of every live row of a full list, read on `conn` page by page, oldest change first. PostgresNIO reads
    /// rows from the socket as they are consumed: the cursor moves at the client's pace.
    func forEachLivePage(
        on conn: PostgresConnection, spaceID: String, collection: String, _ page: (LiveBodies) async throws -> Void
    ) async throws {
        let rows = try await conn.run(
            PreparedStatements.SnapshotLiveRows(spaceID: spaceID, collection: collection), prepared: usesPreparedStatements, logger: logger)
        var batch = LiveBodies()
        var bytes = 0
        batch.reserveCapacity(StreamPaging.pageSize)
        for try await body in rows {
            guard let body else { continue }
            batch.append(body)
            bytes += body.readableBytes
            if StreamPaging.isFull(count: batch.count, bytes: bytes) {
                try await page(batch)
                batch.removeAll(keepingCapacity: true)
                bytes = 0
            }
        }
        if !batch.isEmpty { try await page(batch) }
    }
}
