import Foundation
import GRDB
import SyncCore

/// Spaces whose last member left, deleted with their data after the tombstone retention (protocol §15), in small
/// batches so the single writer is never held long; each batch checks again that the space is still empty. Its media
/// go with the media purge, which deletes what no live item names (none, once its items are gone).
extension SQLiteStore {

    public func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int {
        let spaces = try await write { db in
            try String.fetchAll(
                cached: db, sql: "SELECT id FROM families WHERE emptied_ms < ? ORDER BY emptied_ms LIMIT 1000", arguments: [cutoffMs])
        }
        var purged = 0
        for space in spaces where try await purge(space: space, cutoffMs: cutoffMs) { purged += 1 }
        return purged
    }

    /// Deletes one emptied space's data, then its row (kept, emptied of everything, while an account still names it as
    /// the space it was made in); false when it is not empty any more.
    private func purge(space: String, cutoffMs: Int64) async throws -> Bool {
        while true {
            let step = try await write { db -> Int? in
                let empty = try Int64.fetchOne(
                    cached: db,
                    sql: """
                        SELECT 1 FROM families WHERE id = ?1 AND emptied_ms < ?2
                          AND NOT EXISTS (SELECT 1 FROM memberships WHERE space_id = ?1)
                        """, arguments: [space, cutoffMs])
                guard empty != nil else {
                    try db.executeCached(
                        sql: "UPDATE families SET emptied_ms = NULL WHERE id = ?1 AND EXISTS (SELECT 1 FROM memberships WHERE space_id = ?1)",
                        arguments: [space])
                    return nil
                }
                try db.executeCached(
                    sql: """
                        DELETE FROM items WHERE (family_id, collection, parent_id, id) IN (
                          SELECT family_id, collection, parent_id, id FROM items WHERE family_id = ? LIMIT ?)
                        """,
                    arguments: [space, Self.purgeBatch])
                guard db.changesCount == 0 else { return db.changesCount }
                try db.executeCached(sql: "DELETE FROM invitations WHERE space_id = ?", arguments: [space])
                try db.executeCached(
                    sql: "UPDATE families SET emptied_ms = NULL WHERE id = ?1 AND EXISTS (SELECT 1 FROM accounts WHERE family_id = ?1)",
                    arguments: [space])
                try db.executeCached(
                    sql: "DELETE FROM families WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM accounts WHERE family_id = ?1)",
                    arguments: [space])
                return 0
            }
            guard let step else { return false }
            if step == 0 { return true }
        }
    }
}
