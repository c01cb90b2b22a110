/// The purge of emptied spaces, written once for both backends: each batch a short transaction that takes the lock a
/// write of its space takes, so a purge waits for writers, never the other way round. (The tombstone purge is each
/// backend's own: SQLite walks its tombstone index across families, PostgreSQL goes family by family.)
package struct PurgeStatements: Sendable {
    package let executor: any SQLExecutor

    package init(_ executor: any SQLExecutor) { self.executor = executor }

    /// Rows deleted per transaction.
    static var batch: Int { 500 }
    /// A purge is a background job, not a request: each batch may take longer than a request's deadline.
    static var batchLimit: Duration { .seconds(3600) }

    /// Deletes spaces whose last member left before `cutoffMs` with their data (protocol §15), items in batches, each
    /// batch checking again that the space is still empty (a join or a write can then meet no half-deleted space).
    /// Its media go with the media purge, which deletes what no live item names (none, once its items are gone).
    package func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int {
        let spaces = try await executor.inSQLStatements(writes: false, within: Self.batchLimit) { c in
            try await c.rows("SELECT id FROM families WHERE emptied_ms < \(cutoffMs) ORDER BY emptied_ms LIMIT 1000").map { $0.text(0) }
        }
        var purged = 0
        for space in spaces where try await purge(space: space, cutoffMs: cutoffMs) { purged += 1 }
        return purged
    }

    /// Deletes one emptied space's data, then its row (kept, emptied of everything, while an account still names it as
    /// the space it was made in); false when it is not empty any more.
    private func purge(space: String, cutoffMs: Int64) async throws -> Bool {
        while true {
            let step = try await executor.inSQLTransaction(within: Self.batchLimit) { c -> Int? in
                let empty = try await c.row(
                    """
                    SELECT 1 FROM families WHERE id = \(space) AND emptied_ms < \(cutoffMs)
                      AND NOT EXISTS (SELECT 1 FROM memberships WHERE space_id = \(space))\(.forUpdate)
                    """)
                guard empty != nil else {
                    try await c.execute(
                        """
                        UPDATE families SET emptied_ms = NULL WHERE id = \(space) AND EXISTS (SELECT 1 FROM memberships WHERE space_id = \(space))
                        """)
                    return nil
                }
                let deleted = try await c.rows(
                    """
                    DELETE FROM items WHERE (family_id, collection, parent_id, id) IN (
                      SELECT family_id, collection, parent_id, id FROM items WHERE family_id = \(space) LIMIT \(Self.batch))
                    RETURNING 1
                    """
                ).count
                guard deleted == 0 else { return deleted }
                try await c.execute("DELETE FROM invitations WHERE space_id = \(space)")
                try await c.execute(
                    "UPDATE families SET emptied_ms = NULL WHERE id = \(space) AND EXISTS (SELECT 1 FROM accounts WHERE family_id = \(space))")
                try await c.execute(
                    "DELETE FROM families WHERE id = \(space) AND NOT EXISTS (SELECT 1 FROM accounts WHERE family_id = \(space))")
                return 0
            }
            guard let step else { return false }
            if step == 0 { return true }
        }
    }
}
