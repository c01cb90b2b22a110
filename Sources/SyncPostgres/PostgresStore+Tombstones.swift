import Foundation
import Logging
import PostgresNIO
import SyncAPI

/// Tombstone purge in PostgreSQL, safe on a live database: one instance at a time (advisory lock), each batch in
/// its own short transaction that locks the family row first, in the same order as every writer.
extension PostgresStore {

    public func purgeTombstones(cutoffMs: Int64) async throws -> Int {
        // A background job, not a request: it runs as long as the batches take.
        try await guarded(within: .seconds(3600)) { _ in
            try await client.withConnection { conn in try await purgeBatches(cutoffMs: cutoffMs, on: conn) }
        }
    }

    /// The advisory lock key of the purge (the migration takes 7311562).
    static let purgeLockKey: Int64 = 7_311_563
    /// Tombstones deleted per transaction.
    static let purgeBatch = 500

    private func purgeBatches(cutoffMs: Int64, on conn: PostgresConnection) async throws -> Int {
        var families: [String] = []
        for try await id in try await conn.statement(
            "SELECT DISTINCT family_id FROM items WHERE deleted AND modified_ms < \(cutoffMs) ORDER BY family_id", logger: logger
        ).decode(String.self) { families.append(id) }
        var total = 0
        for family in families {
            while true {
                let purged = try await inTransaction(on: conn) { conn -> Int? in
                    // One instance purges at a time, each batch under a transaction-scoped lock: a session-scoped one
                    // could be taken and released on different server sessions behind a pooler and leak. Another
                    // instance holding it is purging: its purge covers this one.
                    var mine = false
                    for try await ok in try await conn.statement("SELECT pg_try_advisory_xact_lock(\(Self.purgeLockKey))", logger: logger)
                        .decode(Bool.self)
                    { mine = ok }
                    guard mine else { return nil }
                    // The family row first, as writers do: the purge waits for them, never the other way round.
                    try await conn.statement("SELECT 1 FROM families WHERE id = \(family) FOR UPDATE", logger: logger)
                    var count = 0
                    for try await n in try await conn.statement(
                        """
                        WITH purged AS (
                          DELETE FROM items WHERE (family_id, collection, parent_id, id) IN (
                            SELECT family_id, collection, parent_id, id FROM items
                            WHERE family_id = \(family) AND deleted AND modified_ms < \(cutoffMs) LIMIT \(Self.purgeBatch))
                          RETURNING version
                        ), raised AS (
                          UPDATE families SET horizon = GREATEST(horizon, (SELECT max(version) FROM purged))
                          WHERE id = \(family) AND EXISTS (SELECT 1 FROM purged) RETURNING 1
                        )
                        SELECT count(*) FROM purged
                        """, logger: logger
                    ).decode(Int64.self) { count = Int(n) }
                    return count
                }
                guard let purged else { return total }
                total += purged
                if purged < Self.purgeBatch { break }
            }
        }
        return total
    }
}
