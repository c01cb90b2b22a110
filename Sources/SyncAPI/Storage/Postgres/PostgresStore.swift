import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The production store: PostgreSQL through a pooled `PostgresClient`, every value bound.
///
/// Several server instances may share one database: writes serialize per family on the family row's lock,
/// reads take one statement's snapshot.
public struct PostgresStore: SyncStore {
    /// The pooled client; it must run in the application's service group (`client.run()`).
    public let client: PostgresClient
    let logger: Logger
    /// How long a call may wait for the database (mostly for a pooled connection) before answering 503.
    let deadline: Duration

    public init(client: PostgresClient, logger: Logger, deadline: Duration = .seconds(10)) {
        self.client = client
        self.logger = logger
        self.deadline = deadline
    }

    /// The connection, inside a REPEATABLE READ transaction, that `withReadSnapshot` pinned for the current task.
    @TaskLocal static var pinned: PostgresConnection?

    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await guarded {
            try await transaction(readOnlySnapshot: true) { conn in
                try await Self.$pinned.withValue(conn) { try await body() }
            }
        }
    }

    /// Runs reads on the pinned snapshot's connection, else on a pooled connection.
    private func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        if let pinned = Self.pinned { return try await body(pinned) }
        return try await client.withConnection { conn in try await body(conn) }
    }

    /// Runs several reads in one snapshot: the pinned one, else a new REPEATABLE READ transaction.
    private func snapshotRead<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        if let pinned = Self.pinned { return try await body(pinned) }
        return try await transaction(readOnlySnapshot: true, body)
    }

    // MARK: Schema

    public func migrate() async throws {
        try await guarded {
            try await transaction { conn in
                // One migrator at a time when several instances start together.
                try await conn.query("SELECT pg_advisory_xact_lock(7311562)", logger: logger)
                try await conn.query(
                    "CREATE TABLE IF NOT EXISTS syncapi_migrations (name TEXT PRIMARY KEY, applied_ms BIGINT NOT NULL)",
                    logger: logger)
                var applied = Set<String>()
                for try await name in try await conn.query("SELECT name FROM syncapi_migrations", logger: logger).decode(String.self) {
                    applied.insert(name)
                }
                for migration in EmbeddedMigrations.postgres where !applied.contains(migration.name) {
                    // The extended protocol takes one statement at a time.
                    for statement in Self.statements(of: migration.sql) {
                        try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    let now = WallClock.nowMs()
                    try await conn.query(
                        "INSERT INTO syncapi_migrations (name, applied_ms) VALUES (\(migration.name), \(now))", logger: logger)
                }
                let id = DatabaseIdentity.random()
                try await conn.query(
                    "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', \(id)) ON CONFLICT (key) DO NOTHING",
                    logger: logger)
            }
        }
    }

    /// The statements of a migration file: comment lines dropped, split at `;`.
    static func statements(of sql: String) -> [String] {
        let code = sql.split(separator: "\n").filter { !$0.trimmingPrefix(" ").hasPrefix("--") }.joined(separator: "\n")
        return code.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    public func databaseID() async throws -> String {
        try await guarded {
            let rows = try await client.query("SELECT value FROM syncapi_meta WHERE key = 'database_id'", logger: logger)
            for try await id in rows.decode(String.self) { return id }
            throw SyncError.unavailable
        }
    }

    public func ping() async throws {
        try await guarded { try await client.query("SELECT 1", logger: logger) }
    }

    // MARK: Accounts

    public func createFamily(id: String, name: String, familyBody: String, account: NewAccount, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await conn.query(
                    "INSERT INTO families (id, name, version, created_ms) VALUES (\(id), \(name), 0, \(nowMs))", logger: logger)
                let version = try await insertAccount(account, familyID: id, nowMs: nowMs, on: conn)
                let family = RowWrite(key: ItemKey(collection: Collections.family.name, id: id), body: familyBody)
                try await storeRow(family, familyID: id, version: version, nowMs: nowMs, on: conn)
            }
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64) async throws {
        try await guarded {
            try await transaction { conn in
                try await lockFamily(familyID, on: conn)
                try await insertAccount(account, familyID: familyID, nowMs: nowMs, on: conn)
            }
        }
    }

    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    private func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, on conn: PostgresConnection) async throws -> Int64 {
        let key = account.username.lowercased()
        do {
            try await conn.query(
                """
                INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                VALUES (\(account.id), \(familyID), \(account.username), \(key), \(account.displayName), \(account.passwordHash), \(nowMs))
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw SyncError.usernameTaken
        }
        var version: Int64?
        for row in account.rows {
            version = try await storeRow(row, familyID: familyID, version: version, nowMs: nowMs, on: conn).version
        }
        return version ?? 0
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await guarded {
            let rows = try await client.query(
                "SELECT id, family_id, password_hash FROM accounts WHERE username_key = \(usernameKey)", logger: logger)
            for try await (id, family, hash) in rows.decode((String, String, String).self) {
                return AccountCredentials(accountID: id, familyID: family, passwordHash: hash)
            }
            return nil
        }
    }

    public func insertToken(hash: String, session: Session, expiresMs: Int64) async throws {
        try await guarded {
            try await client.query(
                """
                INSERT INTO tokens (hash, account_id, family_id, expires_ms)
                VALUES (\(hash), \(session.accountID), \(session.familyID), \(expiresMs))
                """, logger: logger)
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> Session? {
        try await guarded {
            try await read { conn in
                let rows = try await conn.query(
                    "SELECT account_id, family_id FROM tokens WHERE hash = \(tokenHash) AND expires_ms > \(nowMs)", logger: logger)
                for try await (account, family) in rows.decode((String, String).self) {
                    return Session(accountID: account, familyID: family)
                }
                return nil
            }
        }
    }

    public func deleteToken(hash: String) async throws {
        try await guarded { try await client.query("DELETE FROM tokens WHERE hash = \(hash)", logger: logger) }
    }

    public func failedLogins(usernameKey: String) async throws -> (count: Int, windowStartMs: Int64)? {
        try await guarded {
            let rows = try await client.query(
                "SELECT failures, window_start_ms FROM login_failures WHERE username_key = \(usernameKey)", logger: logger)
            for try await (count, start) in rows.decode((Int32, Int64).self) { return (Int(count), start) }
            return nil
        }
    }

    public func recordFailedLogin(usernameKey: String, nowMs: Int64, windowMs: Int64) async throws {
        let windowOpen = nowMs - windowMs
        try await guarded {
            try await client.query(
                """
                INSERT INTO login_failures (username_key, failures, window_start_ms) VALUES (\(usernameKey), 1, \(nowMs))
                ON CONFLICT (username_key) DO UPDATE SET
                  failures = CASE WHEN login_failures.window_start_ms <= \(windowOpen) THEN 1 ELSE login_failures.failures + 1 END,
                  window_start_ms = CASE WHEN login_failures.window_start_ms <= \(windowOpen) THEN \(nowMs)
                                    ELSE login_failures.window_start_ms END
                """, logger: logger)
        }
    }

    public func clearFailedLogins(usernameKey: String) async throws {
        try await guarded {
            try await client.query("DELETE FROM login_failures WHERE username_key = \(usernameKey)", logger: logger)
        }
    }

    // MARK: Items

    /// The columns every item query reads, in `StoredItem` order.
    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"
    typealias ItemColumns = (String, Int64, Bool, String?, Int64?, Int64?, String?)

    static func storedItem(_ c: ItemColumns) -> StoredItem {
        StoredItem(id: c.0, version: c.1, deleted: c.2, body: c.3, sortMs: c.4, sortVersion: c.5, tag: c.6)
    }

    static func items(_ rows: PostgresRowSequence) async throws -> [StoredItem] {
        var out: [StoredItem] = []
        for try await c in rows.decode(ItemColumns.self) { out.append(storedItem(c)) }
        return out
    }

    private func fetchItem(familyID: String, key: ItemKey, on conn: PostgresConnection) async throws -> StoredItem? {
        try await Self.items(
            try await conn.query(
                """
                SELECT \(unescaped: Self.columns) FROM items
                WHERE family_id = \(familyID) AND collection = \(key.collection) AND parent_id = \(key.parentID) AND id = \(key.id)
                """, logger: logger)
        ).first
    }

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await guarded { try await read { conn in try await fetchItem(familyID: familyID, key: key, on: conn) } }
    }

    public func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await guarded {
            try await transaction { conn in
                // Lock the family row first: it orders this write against every other write of the family.
                let locked = try await conn.query("SELECT version FROM families WHERE id = \(familyID) FOR UPDATE", logger: logger)
                var found = false
                for try await _ in locked.decode(Int64.self) { found = true }
                guard found else { throw SyncError.unauthorized }
                let existing = try await fetchItem(familyID: familyID, key: key, on: conn)
                var parentRow: StoredItem?
                if let parent { parentRow = try await fetchItem(familyID: familyID, key: parent, on: conn) }
                switch try plan(WriteContext(existing: existing, parent: parentRow)) {
                case .unchanged:
                    return WriteOutcome(item: existing, changed: false)
                case .write(let rows):
                    var version: Int64?
                    var result = existing
                    for row in rows {
                        let stored = try await storeRow(row, familyID: familyID, version: version, nowMs: nowMs, on: conn)
                        version = stored.version
                        if row.key == key { result = stored }
                    }
                    return WriteOutcome(item: result, changed: true)
                }
            }
        }
    }

    /// Writes one row; with no `version` yet, bumps the family counter in the same statement and uses the new value.
    @discardableResult
    private func storeRow(
        _ row: RowWrite, familyID: String, version: Int64?, nowMs: Int64, on conn: PostgresConnection
    ) async throws
        -> StoredItem
    {
        let key = row.key
        let deleted = row.body == nil
        let rows = try await conn.query(
            """
            WITH bumped AS (
              UPDATE families SET version = version + 1 WHERE id = \(familyID) AND \(version == nil) RETURNING version
            ), v AS (
              SELECT version FROM bumped UNION ALL SELECT \(version ?? 0)::BIGINT WHERE \(version != nil)
            )
            INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
            SELECT \(familyID), \(key.collection), \(key.parentID), \(key.id), v.version, \(deleted), \(row.body), \(nowMs),
                   \(row.sortMs), v.version, \(row.tag) FROM v
            ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
              version = EXCLUDED.version, deleted = EXCLUDED.deleted, body = EXCLUDED.body, modified_ms = EXCLUDED.modified_ms,
              sort_ms = EXCLUDED.sort_ms, tag = EXCLUDED.tag,
              sort_version = CASE WHEN \(row.sortMoved) OR items.sort_version IS NULL THEN EXCLUDED.version ELSE items.sort_version END
            RETURNING version, sort_version
            """, logger: logger)
        var stored: StoredItem?
        for try await (v, sortVersion) in rows.decode((Int64, Int64?).self) {
            stored = StoredItem(
                id: key.id, version: v, deleted: deleted, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion, tag: row.tag)
        }
        guard let stored else { throw SyncError.unauthorized }
        if let children = row.deleteChildren {
            try await conn.query(
                """
                UPDATE items SET deleted = true, body = NULL, version = \(stored.version), modified_ms = \(nowMs)
                WHERE family_id = \(familyID) AND collection = \(children) AND parent_id = \(key.id) AND NOT deleted
                """, logger: logger)
        }
        return stored
    }

    private func lockFamily(_ familyID: String, on conn: PostgresConnection) async throws {
        let rows = try await conn.query("SELECT version FROM families WHERE id = \(familyID) FOR UPDATE", logger: logger)
        for try await _ in rows.decode(Int64.self) { return }
        throw SyncError.unauthorized
    }

    public func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await guarded {
            try await read { conn in try await deltaRows(conn: conn, familyID: familyID, collections: collections, since: since) }
        }
    }

    /// One statement: the counter and the rows come from the same snapshot.
    private func deltaRows(conn: PostgresConnection, familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        let after = since ?? 0
        let includeDeleted = since != nil
        let rows = try await conn.query(
            """
            SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
            FROM families f
            LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY(\(collections)) AND i.parent_id = ''
              AND i.version > \(after) AND (\(includeDeleted) OR NOT i.deleted)
            WHERE f.id = \(familyID)
            ORDER BY i.version
            """, logger: logger)
        var version: Int64?
        var horizon: Int64 = 0
        var items: [String: [StoredItem]] = [:]
        for try await (fv, fh, collection, id, iv, deleted, body, sortMs, sortVersion, tag) in rows.decode(
            (Int64, Int64, String?, String?, Int64?, Bool?, String?, Int64?, Int64?, String?).self)
        {
            version = fv
            horizon = fh
            if let collection, let id, let iv, let deleted {
                items[collection, default: []].append(
                    StoredItem(id: id, version: iv, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag))
            }
        }
        guard let version else { throw SyncError.unauthorized }
        return Delta(version: version, horizon: horizon, rows: items)
    }

    // MARK: Tombstones

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

    // MARK: Pages

    /// `SELECT … FROM` the live items of the page's list, with the tag filter; callers append their conditions.
    private static func liveList(_ query: PageQuery, familyID: String) -> PostgresQuery.StringInterpolation {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 256, interpolationCount: 5)
        sql.appendLiteral("SELECT \(columns) FROM items WHERE family_id = ")
        sql.appendInterpolation(familyID)
        sql.appendLiteral(" AND collection = ")
        sql.appendInterpolation(query.collection)
        sql.appendLiteral(" AND parent_id = ")
        sql.appendInterpolation(query.parentID)
        sql.appendLiteral(" AND NOT deleted AND (")
        sql.appendInterpolation(query.tags == nil)
        sql.appendLiteral(" OR tag = ANY(")
        sql.appendInterpolation(query.tags ?? [])
        sql.appendLiteral("))")
        return sql
    }

    /// Appends `AND (sort_ms, id) <op> (anchor)`.
    private static func compare(_ sql: inout PostgresQuery.StringInterpolation, _ op: String, _ anchor: StoredItem) {
        sql.appendLiteral(" AND (sort_ms, id) \(op) (")
        sql.appendInterpolation(anchor.sortMs ?? 0)
        sql.appendLiteral(", ")
        sql.appendInterpolation(anchor.id)
        sql.appendLiteral(")")
    }

    /// Appends the page order and a limit.
    private static func ordered(_ sql: inout PostgresQuery.StringInterpolation, ascending: Bool = false, limit: Int) -> PostgresQuery {
        sql.appendLiteral(ascending ? " ORDER BY sort_ms ASC, id ASC LIMIT " : " ORDER BY sort_ms DESC, id DESC LIMIT ")
        sql.appendInterpolation(limit)
        return PostgresQuery(stringInterpolation: sql)
    }

    private func children(
        _ query: PageQuery, familyID: String, of parents: [StoredItem], on conn: PostgresConnection
    ) async throws
        -> [String: [StoredItem]]
    {
        guard let children = query.children, !parents.isEmpty else { return [:] }
        var ids: [String] = []
        for parent in parents where !ids.contains(parent.id) { ids.append(parent.id) }
        var out: [String: [StoredItem]] = Dictionary(uniqueKeysWithValues: ids.map { ($0, []) })
        let rows = try await conn.query(
            """
            SELECT p.pid, c.id, c.version, c.deleted, c.body, c.sort_ms, c.sort_version, c.tag
            FROM unnest(\(ids)::text[]) AS p(pid)
            CROSS JOIN LATERAL (
              SELECT \(unescaped: Self.columns) FROM items
              WHERE family_id = \(familyID) AND collection = \(children.collection) AND parent_id = p.pid COLLATE "C" AND NOT deleted
              ORDER BY sort_ms DESC, id DESC LIMIT \(children.limit + 1)
            ) c
            ORDER BY p.pid, c.sort_ms DESC, c.id DESC
            """, logger: logger)
        for try await (pid, id, version, deleted, body, sortMs, sortVersion, tag) in rows.decode(
            (String, String, Int64, Bool, String?, Int64?, Int64?, String?).self)
        {
            out[pid, default: []].append(Self.storedItem((id, version, deleted, body, sortMs, sortVersion, tag)))
        }
        return out
    }

    public func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await guarded {
            try await snapshotRead { conn in
                var family: (Int64, Int64)?
                for try await row in try await conn.query(
                    "SELECT version, horizon FROM families WHERE id = \(familyID)", logger: logger
                ).decode((Int64, Int64).self) { family = row }
                guard let family else { throw SyncError.unauthorized }
                var anchor: StoredItem?
                if let anchorID = query.anchorID {
                    anchor = try await fetchItem(
                        familyID: familyID, key: ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID), on: conn)
                }
                let limit = query.limit + 1
                var changed: [StoredItem] = []
                if let since, query.anchorID == nil || anchor != nil {
                    var sql = Self.liveList(query, familyID: familyID)
                    sql.appendLiteral(" AND version > ")
                    sql.appendInterpolation(since)
                    if let anchor { Self.compare(&sql, ">=", anchor) }
                    changed = try await Self.items(try await conn.query(Self.ordered(&sql, limit: limit), logger: logger))
                }
                var topSQL = Self.liveList(query, familyID: familyID)
                let top = try await Self.items(try await conn.query(Self.ordered(&topSQL, limit: limit), logger: logger))
                var belowAnchor = false
                if let anchor {
                    var sql = Self.liveList(query, familyID: familyID)
                    Self.compare(&sql, "<", anchor)
                    belowAnchor = try await !Self.items(try await conn.query(Self.ordered(&sql, limit: 1), logger: logger)).isEmpty
                }
                var bottomSQL = Self.liveList(query, familyID: familyID)
                let bottom = try await Self.items(
                    try await conn.query(Self.ordered(&bottomSQL, ascending: true, limit: 1), logger: logger)
                ).first
                var deleted: [String] = []
                if let since {
                    for try await id in try await conn.query(
                        """
                        SELECT id FROM items WHERE family_id = \(familyID) AND collection = \(query.collection)
                        AND parent_id = \(query.parentID) AND deleted AND version > \(since) ORDER BY version
                        """, logger: logger
                    ).decode(String.self) { deleted.append(id) }
                }
                return PageSyncRows(
                    version: family.0, horizon: family.1, anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
                    bottom: bottom, deleted: deleted,
                    children: try await children(query, familyID: familyID, of: changed + top, on: conn))
            }
        }
    }

    public func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        try await guarded {
            try await snapshotRead { conn in
                var sql = Self.liveList(query, familyID: familyID)
                if let anchorID = query.anchorID {
                    let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                    guard let anchor = try await fetchItem(familyID: familyID, key: key, on: conn) else { return nil }
                    Self.compare(&sql, "<", anchor)
                }
                let items = try await Self.items(try await conn.query(Self.ordered(&sql, limit: query.limit + 1), logger: logger))
                return PageRows(items: items, children: try await children(query, familyID: familyID, of: items, on: conn))
            }
        }
    }

    // MARK: Plumbing

    /// Runs `body` in one transaction on one pooled connection, rolling back when it throws.
    /// With `readOnlySnapshot`, every statement of `body` reads one snapshot (REPEATABLE READ, READ ONLY).
    private func transaction<T: Sendable>(
        readOnlySnapshot: Bool = false, _ body: (PostgresConnection) async throws -> T
    ) async throws
        -> T
    {
        try await client.withConnection { conn in
            try await conn.query(readOnlySnapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN", logger: logger)
            do {
                let value = try await body(conn)
                try await conn.query("COMMIT", logger: logger)
                return value
            } catch {
                _ = try? await conn.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// Maps lost connections, and calls that wait past the deadline, to 503 `unavailable`; domain errors pass
    /// through; the rest is logged and rethrown.
    @discardableResult
    private func guarded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                let deadline = self.deadline
                group.addTask {
                    try await Task.sleep(for: deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else { throw SyncError.unavailable }
                return value
            }
        } catch let error as SyncError {
            if error == .unavailable { logger.warning("database did not answer within \(deadline)") }
            throw error
        } catch let error as PSQLError {
            if error.serverInfo == nil {
                logger.warning("database unreachable", metadata: ["error": "\(String(reflecting: error))"])
                throw SyncError.unavailable
            }
            logger.error("database error", metadata: ["error": "\(String(reflecting: error))"])
            throw error
        }
    }
}
