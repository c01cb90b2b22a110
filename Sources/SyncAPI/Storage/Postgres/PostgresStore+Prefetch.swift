import PostgresNIO

/// A group's deltas in one statement (issue 19, item 2: one round trip per snapshot, not one per sub-request).
extension PostgresStore {
    /// Reads the answers of several `delta` calls of one family in one statement on the pinned snapshot, and returns
    /// this store with them (`prefetched`). Off a snapshot, for fewer than two calls, or for calls of several families,
    /// the store as it is: nothing would be saved.
    public func prefetchingDeltas(_ requests: [DeltaRequest]) async throws -> any SyncStore {
        var seen = Set<DeltaRequest>()
        let requests = requests.filter { seen.insert($0).inserted }
        guard pinned != nil, requests.count >= 2, let familyID = requests.first?.familyID,
            requests.allSatisfy({ $0.familyID == familyID })
        else { return self }
        let (logger, prepared) = (self.logger, usesPreparedStatements)
        let deltas = try await guarded {
            try await read { conn in try await Self.deltas(of: requests, familyID: familyID, conn: conn, prepared: prepared, logger: logger) }
        }
        var store = self
        store.prefetched = deltas
        return store
    }

    /// The deltas of `requests` from `PreparedStatements.Deltas`: each call's rows in version order, as
    /// `PreparedStatements.Delta` gives them for one call. No rows at all: no such family (nothing is prefetched; the
    /// call itself answers as it would have).
    static func deltas(
        of requests: [DeltaRequest], familyID: String, conn: PostgresConnection, prepared: Bool, logger: Logger
    ) async throws
        -> [DeltaRequest: Delta]
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
                familyID: familyID, calls: calls, collections: collections, after: after, includeDeleted: includeDeleted),
            prepared: prepared, logger: logger)
        var counter: (version: Int64, horizon: Int64)?
        var items = [[String: [StoredItem]]](repeating: [:], count: requests.count)
        for try await (call, version, horizon, collection, id, itemVersion, deleted, body, sortMs, sortVersion, tag) in rows {
            counter = (version, horizon)
            guard let collection, let id, let itemVersion, let deleted else { continue }
            items[Int(call)][collection, default: []].append(
                StoredItem(id: id, version: itemVersion, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag))
        }
        guard let counter else { return [:] }
        var deltas: [DeltaRequest: Delta] = [:]
        for (index, request) in requests.enumerated() {
            deltas[request] = Delta(version: counter.version, horizon: counter.horizon, rows: items[index])
        }
        return deltas
    }
}
