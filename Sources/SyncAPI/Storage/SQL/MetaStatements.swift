/// What the database records about itself (its id, the model it serves) and the rewrite of bodies a model change
/// asks for, written once for both backends.
package struct MetaStatements: Sendable {
    package let executor: any SQLExecutor

    package init(_ executor: any SQLExecutor) { self.executor = executor }

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
