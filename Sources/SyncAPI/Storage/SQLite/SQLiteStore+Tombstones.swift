import Foundation
import GRDB

/// Tombstone purge in SQLite.
extension SQLiteStore {

    public func purgeTombstones(cutoffMs: Int64) async throws -> Int {
        try await pool.write { db in
            try db.executeCached(
                sql: """
                    UPDATE families SET horizon = max(horizon, (
                      SELECT max(version) FROM items WHERE family_id = families.id AND deleted AND modified_ms < ?1))
                    WHERE id IN (SELECT family_id FROM items WHERE deleted AND modified_ms < ?1)
                    """, arguments: [cutoffMs])
            try db.executeCached(sql: "DELETE FROM items WHERE deleted AND modified_ms < ?", arguments: [cutoffMs])
            return db.changesCount
        }
    }
}
