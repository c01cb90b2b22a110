/// What the database records about itself (its id, the model it serves) and the rewrite of bodies a model change
/// asks for, written once for both backends.
package struct MetaStatements<Executor: SQLExecutor>: Sendable {
    package let executor: Executor

    package init(_ executor: Executor) { self.executor = executor }

    /// The advisory lock that orders model changes across instances.
    static var modelLockKey: Int64 { 0x7379_6e63_6d6f_646c }

    package func databaseID() async throws -> String {
        guard let id = try await value(of: "database_id") else { throw SyncError.unavailable }
        return id
    }

    package func rotateDatabaseID() async throws -> String {
        let id = DatabaseIdentity.random()
        try await executor.inSQLStatements(writes: true) { c in
            try await c.execute("UPDATE syncapi_meta SET value = \(id) WHERE key = 'database_id'")
        }
        return id
    }

    package func servedModel() async throws -> String? { try await value(of: "model") }

    package func modelGenerations() async throws -> String? { try await value(of: "model_generations") }

    package func recordModel(_ normalized: String, generations: String?, expected: RecordedModel) async throws -> Bool {
        try await executor.inSQLTransaction { c in
            // One instance at a time decides against what is recorded.
            if let lock = c.dialect.exclusiveLock(Self.modelLockKey, wait: true) { try await c.execute(lock) }
            var recorded = RecordedModel(model: nil, generations: nil)
            for row in try await c.rows("SELECT key, value FROM syncapi_meta WHERE key IN ('model', 'model_generations')") {
                if row.text(0) == "model" { recorded.model = row.text(1) } else { recorded.generations = row.text(1) }
            }
            guard recorded == expected else { return false }
            for (key, value) in [("model", normalized), ("model_generations", generations)] {
                guard let value else { continue }
                try await c.execute(
                    """
                    INSERT INTO syncapi_meta (key, value) VALUES (\(key), \(value))
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """)
            }
            return true
        }
    }

    /// Rewrites every body of `collection` that `transform` changes, 500 rows a transaction (each row locked until its
    /// batch commits), in key order; returns how many changed.
    package func rewriteBodies(collection: String, _ transform: @escaping @Sendable (String) -> String?) async throws -> Int {
        var after = ("", "", "")
        var changed = 0
        while true {
            let start = after
            let (count, last) = try await executor.inSQLTransaction(within: .seconds(300)) { c -> (Int, (String, String, String)?) in
                let rows = try await c.rows(
                    """
                    SELECT family_id, parent_id, id, body FROM items
                    WHERE collection = \(collection) AND body IS NOT NULL AND (family_id, parent_id, id) > (\(start.0), \(start.1), \(start.2))
                    ORDER BY family_id, parent_id, id LIMIT 500\(.forUpdate)
                    """)
                var count = 0
                for row in rows {
                    let body = row.text(3)
                    guard let rewritten = transform(body), rewritten != body else { continue }
                    try await c.execute(
                        """
                        UPDATE items SET body = \(rewritten)
                        WHERE family_id = \(row.text(0)) AND collection = \(collection) AND parent_id = \(row.text(1)) AND id = \(row.text(2))
                        """)
                    count += 1
                }
                return (count, rows.last.map { ($0.text(0), $0.text(1), $0.text(2)) })
            }
            changed += count
            guard let last else { return changed }
            after = last
        }
    }

    private func value(of key: String) async throws -> String? {
        try await executor.inSQLStatements(writes: false) { c in
            try await c.row("SELECT value FROM syncapi_meta WHERE key = \(key)")?.text(0)
        }
    }
}

/// The purges of old data, written once for both backends: each batch a short transaction that takes the locks a
/// write of its space takes, in the same order, so a purge waits for writers, never the other way round.
package struct PurgeStatements<Executor: SQLExecutor>: Sendable {
    package let executor: Executor

    package init(_ executor: Executor) { self.executor = executor }

    /// The advisory lock key of the tombstone purge (the migration takes 7311562).
    static var tombstoneLockKey: Int64 { 7_311_563 }
    /// Rows deleted per transaction.
    package static var batch: Int { 500 }
    /// A purge is a background job, not a request: each batch may take longer than a request's deadline.
    static var batchLimit: Duration { .seconds(3600) }

    /// Deletes tombstones modified before `cutoffMs` and raises each family's horizon past the versions it deleted
    /// (protocol §8), family by family. One instance purges at a time: another holding the lock is purging, and its
    /// purge covers this one.
    package func purgeTombstones(cutoffMs: Int64) async throws -> Int {
        let families = try await executor.inSQLStatements(writes: false, within: Self.batchLimit) { c in
            try await c.rows("SELECT DISTINCT family_id FROM items WHERE deleted AND modified_ms < \(cutoffMs) ORDER BY family_id")
                .map { $0.text(0) }
        }
        var total = 0
        for family in families {
            while true {
                let purged = try await executor.inSQLTransaction(within: Self.batchLimit) { c -> Int? in
                    if let lock = c.dialect.exclusiveLock(Self.tombstoneLockKey, wait: false) {
                        guard try await c.row(lock)?.bool(0) == true else { return nil }
                    }
                    // The family row first, as writers do.
                    try await c.execute("SELECT 1 FROM families WHERE id = \(family)\(.forUpdate)")
                    let versions = try await c.rows(
                        """
                        DELETE FROM items WHERE (family_id, collection, parent_id, id) IN (
                          SELECT family_id, collection, parent_id, id FROM items
                          WHERE family_id = \(family) AND deleted AND modified_ms < \(cutoffMs) LIMIT \(Self.batch))
                        RETURNING version
                        """
                    ).map { $0.int(0) }
                    if let newest = versions.max() {
                        try await c.execute("UPDATE families SET horizon = \(.greatest)(horizon, \(newest)) WHERE id = \(family)")
                    }
                    return versions.count
                }
                guard let purged else { return total }
                total += purged
                if purged < Self.batch { break }
            }
        }
        return total
    }

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
