import Foundation
import Logging
import PostgresNIO
import SyncCore

/// Spaces whose last member left, deleted with their data after the tombstone retention (protocol §15), on a live
/// database: items go in batches, each in a short transaction that holds the space's row and checks again that it is
/// still empty, so a write (there can be none: nobody belongs) or a join (there can be none: its invitations went when
/// it emptied) never meets a half-deleted space. Its media go with the media purge, which deletes what no live item
/// names (none, once its items are gone).
extension PostgresStore {

    public func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int {
        try await guarded(within: .seconds(3600)) {
            try await client.withConnection { conn in
                var spaces: [String] = []
                for try await id in try await conn.query(
                    "SELECT id FROM families WHERE emptied_ms < \(cutoffMs) ORDER BY emptied_ms LIMIT 1000", logger: logger
                ).decode(String.self) { spaces.append(id) }
                var purged = 0
                for space in spaces where try await purge(space: space, cutoffMs: cutoffMs, on: conn) { purged += 1 }
                return purged
            }
        }
    }

    /// Deletes one emptied space's data, then its row (kept, emptied of everything, while an account still names it as
    /// the space it was made in); false when it is not empty any more.
    private func purge(space: String, cutoffMs: Int64, on conn: PostgresConnection) async throws -> Bool {
        while true {
            let step = try await inTransaction(on: conn) { conn -> Int? in
                var empty = false
                for try await _ in try await conn.query(
                    """
                    SELECT 1 FROM families WHERE id = \(space) AND emptied_ms < \(cutoffMs)
                      AND NOT EXISTS (SELECT 1 FROM memberships WHERE space_id = \(space)) FOR UPDATE
                    """, logger: logger)
                { empty = true }
                guard empty else {
                    try await conn.query(
                        """
                        UPDATE families SET emptied_ms = NULL
                        WHERE id = \(space) AND EXISTS (SELECT 1 FROM memberships WHERE space_id = \(space))
                        """, logger: logger)
                    return nil
                }
                var deleted = 0
                for try await n in try await conn.query(
                    """
                    WITH gone AS (
                      DELETE FROM items WHERE ctid IN (SELECT ctid FROM items WHERE family_id = \(space) LIMIT \(Self.purgeBatch))
                      RETURNING 1)
                    SELECT count(*) FROM gone
                    """, logger: logger
                ).decode(Int64.self) { deleted = Int(n) }
                guard deleted == 0 else { return deleted }
                try await conn.query("DELETE FROM invitations WHERE space_id = \(space)", logger: logger)
                try await conn.query(
                    """
                    UPDATE families SET emptied_ms = NULL WHERE id = \(space) AND EXISTS (SELECT 1 FROM accounts WHERE family_id = \(space))
                    """, logger: logger)
                try await conn.query(
                    "DELETE FROM families WHERE id = \(space) AND NOT EXISTS (SELECT 1 FROM accounts WHERE family_id = \(space))",
                    logger: logger)
                return 0
            }
            guard let step else { return false }
            if step == 0 { return true }
        }
    }
}
