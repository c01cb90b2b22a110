import Foundation
import Logging
import PostgresNIO

/// Tombstone purge in PostgreSQL.
extension PostgresStore {

    public func purgeTombstones(cutoffMs: Int64) async throws -> Int {
        try await guarded {
            try await transaction { conn in
                // Raising the horizon takes each family's row lock, so it is ordered with that family's writes.
                var count = 0
                let rows = try await conn.query(
                    """
                    WITH purged AS (
                      DELETE FROM items WHERE deleted AND modified_ms < \(cutoffMs) RETURNING family_id, version
                    ), newest AS (
                      SELECT family_id, max(version) AS version, count(*) AS n FROM purged GROUP BY family_id
                    ), raised AS (
                      UPDATE families f SET horizon = GREATEST(f.horizon, newest.version) FROM newest WHERE f.id = newest.family_id
                      RETURNING f.id
                    )
                    SELECT coalesce(sum(n), 0)::BIGINT FROM newest
                    """, logger: logger)
                for try await n in rows.decode(Int64.self) { count = Int(n) }
                return count
            }
        }
    }
}
