import Foundation
import GRDB
import SyncAPI

/// Tombstone purge in SQLite: small batches, so the single writer is never held long.
extension SQLiteStore {

    public func purgeTombstones(cutoffMs: Int64) async throws -> Int {
        var total = 0
        while true {
            let purged = try await write { db -> Int in
                // The batch's keys first, then the horizon (from exactly those rows), then the rows.
                let rows = try Row.fetchAll(
                    cached: db,
                    sql: """
                        SELECT family_id, collection, parent_id, id, version FROM items INDEXED BY items_tombstones
                        WHERE deleted AND modified_ms < ? LIMIT ?
                        """, arguments: [cutoffMs, Self.purgeBatch])
                var newest: [String: Int64] = [:]
                for row in rows {
                    let family: String = row[0]
                    let version: Int64 = row[4]
                    newest[family] = max(newest[family] ?? 0, version)
                    try db.executeCached(
                        sql: "DELETE FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND id = ?",
                        arguments: [row[0] as String, row[1] as String, row[2] as String, row[3] as String])
                }
                for (family, version) in newest {
                    try db.executeCached(sql: "UPDATE families SET horizon = max(horizon, ?) WHERE id = ?", arguments: [version, family])
                }
                return rows.count
            }
            total += purged
            if purged < Self.purgeBatch { return total }
        }
    }

    /// Tombstones deleted per write transaction.
    static let purgeBatch = 500
}
