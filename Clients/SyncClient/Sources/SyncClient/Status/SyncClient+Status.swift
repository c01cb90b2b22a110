import GRDB

extension SyncClient {
    /// The current status.
    public var status: SyncStatus { statusCenter.current }

    /// The status now, then a fresh value on every change (for SwiftUI: `.task { for await s in client.statusUpdates … }`).
    public var statusUpdates: AsyncStream<SyncStatus> { statusCenter.updates() }

    /// Recounts pending and failed writes and the lists' progress into the status.
    func refreshCounts() throws {
        // The model's lists and paginated lists (the account profiles aside).
        let known = (knownModel?.collections.values).map(Array.init) ?? []
        let tracked = known.filter { ($0.kind == .list || $0.kind == .paginated) && !$0.isReadOnly }
        let (pending, failed, lists) = try replica.pool.read { db -> (Int, Int, [String: SyncStatus.ListProgress]) in
            var lists: [String: SyncStatus.ListProgress] = [:]
            for collection in tracked {
                let complete = collection.kind == .paginated ? try Replica.flag(db, MetaKey.nomore(collection.name)) : true
                lists[collection.name.rawValue] = .init(count: try Replica.serverCount(db, collection.name), complete: complete)
            }
            let pending =
                try Int.fetchOne(cached: db, sql: "SELECT (SELECT COUNT(*) FROM queue) + (SELECT COUNT(*) FROM uploads WHERE status IS NULL)") ?? 0
            let failed =
                try Int.fetchOne(cached: db, sql: "SELECT (SELECT COUNT(*) FROM failed) + (SELECT COUNT(*) FROM uploads WHERE status IS NOT NULL)")
                ?? 0
            return (pending, failed, lists)
        }
        statusCenter.update {
            $0.pendingWrites = pending
            $0.failedWrites = failed
            $0.lists = lists
        }
    }
}
