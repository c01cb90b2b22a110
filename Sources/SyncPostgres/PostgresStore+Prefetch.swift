import PostgresNIO
import SyncAPI

/// A group's deltas in one statement: one round trip per snapshot, not one per sub-request (`PostgresSnapshot`).
extension PostgresStore {
    /// At most this many rows are read ahead for one run. Without a bound, a group of 20 deltas of a large family
    /// since its first write (each a different date) would hold 20 deltas in memory at once, where the run one at a
    /// time holds one; past it the run reads its deltas one at a time.
    static let prefetchRowLimit = 2_000

    /// The deltas of `requests` from `PreparedStatements.Deltas`: each call's rows in version order, as
    /// `PreparedStatements.Delta` gives them for one call. No rows at all: no such family (nothing is prefetched; the
    /// call itself answers as it would have). Nil when the calls have more than `limit` rows: only `limit + 1` are
    /// read, then dropped.
    static func deltas(
        of requests: [DeltaRequest], spaceID: String, limit: Int, conn: PostgresConnection, prepared: Bool, logger: Logger
    ) async throws
        -> [DeltaRequest: Delta]?
    {
        var calls: [Int64] = []
        var collections: [String] = []
        var after: [Int64] = []
        var includeDeleted: [Bool] = []
        for (index, request) in requests.enumerated() {
            for collection in request.collections {
                calls.append(Int64(index))
                collections.append(collection)
                after.append(request.since ?? 0)
                includeDeleted.append(request.since != nil)
            }
        }
        let rows = try await conn.run(
            PreparedStatements.Deltas(
                spaceID: spaceID, calls: calls, collections: collections, after: after, includeDeleted: includeDeleted,
                limit: Int64(limit) + 1),
            prepared: prepared, logger: logger)
        var counter: FamilyCounter?
        var items = requests.map { _ in DeltaRows() }
        var count = 0
        // Read to the end (one row past the limit at most), so the pinned connection is left with nothing pending.
        for try await (call, version, horizon, lineage, collection, id, itemVersion, deleted, body, sortMs, sortVersion, tag) in rows {
            count += 1
            guard count <= limit else { continue }
            counter = FamilyCounter(version: version, horizon: horizon, lineage: SpaceLineage.read(lineage))
            guard let collection, let id, let itemVersion, let deleted else { continue }
            items[Int(call)].append(
                StoredItem(id: id, version: itemVersion, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag),
                to: collection)
        }
        guard count <= limit else { return nil }
        guard let counter else { return [:] }
        var deltas: [DeltaRequest: Delta] = [:]
        for (index, request) in requests.enumerated() {
            deltas[request] = items[index].delta(version: counter.version, horizon: counter.horizon, lineage: counter.lineage)
        }
        return deltas
    }
}
