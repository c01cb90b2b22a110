import Foundation
import GRDB

/// The embedded default store: one SQLite file in WAL mode through GRDB, so `syncapi serve` needs no set-up.
///
/// SQLite has one writer at a time, which orders every write (and so every version) by itself; reads run
/// concurrently in WAL snapshots.
public struct SQLiteStore: SyncStore {
    let pool: DatabasePool

    /// Opens (creating if needed) the database file at `path`, creating its folder too.
    public init(path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            try db.executeCached(sql: "PRAGMA synchronous = NORMAL")
        }
        self.pool = try DatabasePool(path: path, configuration: configuration)
    }

    /// The snapshot that `withReadSnapshot` pinned for the current task, if any.
    @TaskLocal static var pinned: DatabaseSnapshot?

    /// Where reads go: the pinned snapshot, else the pool (each read its own WAL snapshot).
    var reader: any DatabaseReader { Self.pinned ?? pool }

    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let snapshot = try pool.makeSnapshot()
        return try await Self.$pinned.withValue(snapshot) { try await body() }
    }

    // MARK: Schema

    public func migrate() async throws {
        var migrator = DatabaseMigrator()
        for migration in EmbeddedMigrations.sqlite {
            let sql = migration.sql
            migrator.registerMigration(migration.name) { db in try db.execute(sql: sql) }
        }
        try migrator.migrate(pool)
        try await pool.write { db in
            try db.executeCached(
                sql: "INSERT INTO syncapi_meta (key, value) VALUES ('database_id', ?) ON CONFLICT (key) DO NOTHING",
                arguments: [DatabaseIdentity.random()])
        }
    }

    public func databaseID() async throws -> String {
        try await reader.read { db in
            guard let id = try String.fetchOne(cached: db, sql: "SELECT value FROM syncapi_meta WHERE key = 'database_id'") else {
                throw SyncError.unavailable
            }
            return id
        }
    }

    public func ping() async throws {
        _ = try await reader.read { db in try Int64.fetchOne(cached: db, sql: "SELECT 1") }
    }

    // MARK: Accounts

    public func createFamily(id: String, name: String, familyBody: String, account: NewAccount, nowMs: Int64) async throws {
        try await pool.write { db in
            try db.executeCached(
                sql: "INSERT INTO families (id, name, version, created_ms) VALUES (?, ?, 0, ?)", arguments: [id, name, nowMs])
            let version = try Self.insertAccount(account, familyID: id, nowMs: nowMs, db: db)
            try Self.storeRow(
                RowWrite(key: ItemKey(collection: Collections.family.name, id: id), body: familyBody), familyID: id, version: version,
                nowMs: nowMs, db: db)
        }
    }

    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64) async throws {
        try await pool.write { db in
            guard try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            try Self.insertAccount(account, familyID: familyID, nowMs: nowMs, db: db)
        }
    }

    /// Inserts the account, its public profile and its default settings at a new version, which it returns.
    @discardableResult
    private static func insertAccount(_ account: NewAccount, familyID: String, nowMs: Int64, db: Database) throws -> Int64 {
        do {
            try db.executeCached(
                sql: """
                    INSERT INTO accounts (id, family_id, username, username_key, display_name, password_hash, created_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    account.id, familyID, account.username, account.username.lowercased(), account.displayName,
                    account.passwordHash, nowMs,
                ])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw SyncError.usernameTaken
        }
        let version = try bump(familyID: familyID, db: db)
        for row in account.rows {
            try storeRow(row, familyID: familyID, version: version, nowMs: nowMs, db: db)
        }
        return version
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await reader.read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT id, family_id, password_hash FROM accounts WHERE username_key = ?", arguments: [usernameKey]
            ).map { AccountCredentials(accountID: $0[0], familyID: $0[1], passwordHash: $0[2]) }
        }
    }

    public func insertToken(hash: String, session: Session, expiresMs: Int64) async throws {
        try await pool.write { db in
            try db.executeCached(
                sql: "INSERT INTO tokens (hash, account_id, family_id, expires_ms) VALUES (?, ?, ?, ?)",
                arguments: [hash, session.accountID, session.familyID, expiresMs])
        }
    }

    public func session(tokenHash: String, nowMs: Int64) async throws -> Session? {
        try await reader.read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT account_id, family_id FROM tokens WHERE hash = ? AND expires_ms > ?",
                arguments: [tokenHash, nowMs]
            ).map { Session(accountID: $0[0], familyID: $0[1]) }
        }
    }

    public func deleteToken(hash: String) async throws {
        try await pool.write { db in try db.executeCached(sql: "DELETE FROM tokens WHERE hash = ?", arguments: [hash]) }
    }

    public func failedLogins(usernameKey: String) async throws -> (count: Int, windowStartMs: Int64)? {
        let row: (Int64, Int64)? = try await reader.read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT failures, window_start_ms FROM login_failures WHERE username_key = ?", arguments: [usernameKey]
            ).map { ($0[0], $0[1]) }
        }
        return row.map { (Int($0.0), $0.1) }
    }

    public func recordFailedLogin(usernameKey: String, nowMs: Int64, windowMs: Int64) async throws {
        let windowOpen = nowMs - windowMs
        try await pool.write { db in
            try db.executeCached(
                sql: """
                    INSERT INTO login_failures (username_key, failures, window_start_ms) VALUES (?1, 1, ?2)
                    ON CONFLICT (username_key) DO UPDATE SET
                      failures = CASE WHEN window_start_ms <= ?3 THEN 1 ELSE failures + 1 END,
                      window_start_ms = CASE WHEN window_start_ms <= ?3 THEN ?2 ELSE window_start_ms END
                    """, arguments: [usernameKey, nowMs, windowOpen])
        }
    }

    public func clearFailedLogins(usernameKey: String) async throws {
        try await pool.write { db in
            try db.executeCached(sql: "DELETE FROM login_failures WHERE username_key = ?", arguments: [usernameKey])
        }
    }

    // MARK: Items

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? {
        try await reader.read { db in try Self.fetchItem(familyID: familyID, key: key, db: db) }
    }

    static let columns = "id, version, deleted, body, sort_ms, sort_version, tag"

    static func storedItem(_ row: Row) -> StoredItem {
        StoredItem(id: row[0], version: row[1], deleted: row[2], body: row[3], sortMs: row[4], sortVersion: row[5], tag: row[6])
    }

    private static func fetchItem(familyID: String, key: ItemKey, db: Database) throws -> StoredItem? {
        try Row.fetchOne(
            cached: db, sql: "SELECT \(columns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND id = ?",
            arguments: [familyID, key.collection, key.parentID, key.id]
        ).map(storedItem)
    }

    public func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await pool.write { db in
            guard try Int64.fetchOne(cached: db, sql: "SELECT version FROM families WHERE id = ?", arguments: [familyID]) != nil else {
                throw SyncError.unauthorized
            }
            let existing = try Self.fetchItem(familyID: familyID, key: key, db: db)
            let parentRow = try parent.flatMap { try Self.fetchItem(familyID: familyID, key: $0, db: db) }
            switch try plan(WriteContext(existing: existing, parent: parentRow)) {
            case .unchanged:
                return WriteOutcome(item: existing, changed: false)
            case .write(let rows):
                let version = try Self.bump(familyID: familyID, db: db)
                var result = existing
                for row in rows {
                    let stored = try Self.storeRow(row, familyID: familyID, version: version, nowMs: nowMs, db: db)
                    if row.key == key { result = stored }
                }
                return WriteOutcome(item: result, changed: true)
            }
        }
    }

    /// The next version of the family's change counter (inside the caller's write transaction).
    private static func bump(familyID: String, db: Database) throws -> Int64 {
        guard
            let version = try Int64.fetchOne(
                cached: db, sql: "UPDATE families SET version = version + 1 WHERE id = ? RETURNING version", arguments: [familyID])
        else { throw SyncError.unauthorized }
        return version
    }

    /// Writes one row at `version` (inside the caller's transaction), tombstoning its children when asked.
    @discardableResult
    private static func storeRow(_ row: RowWrite, familyID: String, version: Int64, nowMs: Int64, db: Database) throws -> StoredItem {
        let key = row.key
        let sortVersion = try Int64.fetchOne(
            cached: db,
            sql: """
                INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?5, ?10)
                ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
                  version = excluded.version, deleted = excluded.deleted, body = excluded.body, modified_ms = excluded.modified_ms,
                  sort_ms = excluded.sort_ms, tag = excluded.tag,
                  sort_version = CASE WHEN ?11 OR items.sort_version IS NULL THEN excluded.version ELSE items.sort_version END
                RETURNING sort_version
                """,
            arguments: [
                familyID, key.collection, key.parentID, key.id, version, row.body == nil, row.body, nowMs, row.sortMs, row.tag,
                row.sortMoved,
            ])
        if let children = row.deleteChildren {
            try db.executeCached(
                sql: """
                    UPDATE items SET deleted = 1, body = NULL, version = ?, modified_ms = ?
                    WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                    """,
                arguments: [version, nowMs, familyID, children, key.id])
        }
        return StoredItem(
            id: key.id, version: version, deleted: row.body == nil, body: row.body, sortMs: row.sortMs, sortVersion: sortVersion,
            tag: row.tag)
    }

    public func delta(familyID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await reader.read { db in
            // One read transaction: the counter and the rows come from the same snapshot.
            guard
                let family = try Row.fetchOne(cached: db, sql: "SELECT version, horizon FROM families WHERE id = ?", arguments: [familyID])
            else { throw SyncError.unauthorized }
            var rows: [String: [StoredItem]] = [:]
            for collection in collections {
                rows[collection] = try Row.fetchAll(
                    cached: db,
                    sql: """
                        SELECT \(Self.columns) FROM items
                        WHERE family_id = ? AND collection = ? AND parent_id = '' AND version > ? AND (? OR NOT deleted)
                        ORDER BY version
                        """,
                    arguments: [familyID, collection, since ?? 0, since != nil]
                ).map(Self.storedItem)
            }
            return Delta(version: family[0], horizon: family[1], rows: rows)
        }
    }

    // MARK: Tombstones

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

    // MARK: Pages

    /// `AND tag IN (…)` for a filter, with its arguments.
    private static func tagFilter(_ tags: [String]?) -> (sql: String, arguments: StatementArguments) {
        guard let tags else { return ("", []) }
        return (" AND tag IN (\(tags.map { _ in "?" }.joined(separator: ",")))", StatementArguments(tags))
    }

    private static func liveList(_ query: PageQuery, familyID: String) -> (sql: String, arguments: StatementArguments) {
        let filter = tagFilter(query.tags)
        return (
            "FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted" + filter.sql,
            [familyID, query.collection, query.parentID] + filter.arguments
        )
    }

    private static let order = " ORDER BY sort_ms DESC, id DESC"

    private static func children(_ query: PageQuery, familyID: String, of parents: [StoredItem], db: Database) throws -> [String: [StoredItem]] {
        guard let children = query.children else { return [:] }
        var out: [String: [StoredItem]] = [:]
        for parent in parents where out[parent.id] == nil {
            out[parent.id] = try Row.fetchAll(
                cached: db,
                sql: """
                    SELECT \(columns) FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND NOT deleted
                    ORDER BY sort_ms DESC, id DESC LIMIT ?
                    """,
                arguments: [familyID, children.collection, parent.id, children.limit + 1]
            ).map(storedItem)
        }
        return out
    }

    public func pageSync(familyID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await reader.read { db in
            guard let family = try Row.fetchOne(cached: db, sql: "SELECT version, horizon FROM families WHERE id = ?", arguments: [familyID]) else {
                throw SyncError.unauthorized
            }
            let list = Self.liveList(query, familyID: familyID)
            let anchor = try query.anchorID.flatMap {
                try Self.fetchItem(familyID: familyID, key: ItemKey(collection: query.collection, parentID: query.parentID, id: $0), db: db)
            }
            var changed: [StoredItem] = []
            if let since, query.anchorID == nil || anchor != nil {
                var sql = "SELECT \(Self.columns) " + list.sql + " AND version > ?"
                var arguments = list.arguments + [since]
                if let anchor {
                    sql += " AND (sort_ms, id) >= (?, ?)"
                    arguments += [anchor.sortMs, anchor.id]
                }
                changed = try Row.fetchAll(cached: db, sql: sql + Self.order + " LIMIT ?", arguments: arguments + [query.limit + 1]).map(
                    Self.storedItem)
            }
            let top = try Row.fetchAll(
                cached: db, sql: "SELECT \(Self.columns) " + list.sql + Self.order + " LIMIT ?", arguments: list.arguments + [query.limit + 1]
            ).map(Self.storedItem)
            var belowAnchor = false
            if let anchor {
                belowAnchor =
                    try Row.fetchOne(
                        cached: db, sql: "SELECT 1 " + list.sql + " AND (sort_ms, id) < (?, ?) LIMIT 1",
                        arguments: list.arguments + [anchor.sortMs, anchor.id])
                    != nil
            }
            let bottom = try Row.fetchOne(
                cached: db, sql: "SELECT \(Self.columns) " + list.sql + " ORDER BY sort_ms ASC, id ASC LIMIT 1", arguments: list.arguments
            ).map(Self.storedItem)
            let deleted: [String] =
                since == nil
                ? []
                : try String.fetchAll(
                    cached: db,
                    sql: "SELECT id FROM items WHERE family_id = ? AND collection = ? AND parent_id = ? AND deleted AND version > ? ORDER BY version",
                    arguments: [familyID, query.collection, query.parentID, since])
            return PageSyncRows(
                version: family[0], horizon: family[1], anchor: anchor, changed: changed, top: top, belowAnchor: belowAnchor,
                bottom: bottom, deleted: deleted,
                children: try Self.children(query, familyID: familyID, of: changed + top, db: db))
        }
    }

    public func page(familyID: String, query: PageQuery) async throws -> PageRows? {
        try await reader.read { db in
            let list = Self.liveList(query, familyID: familyID)
            var sql = "SELECT \(Self.columns) " + list.sql
            var arguments = list.arguments
            if let anchorID = query.anchorID {
                let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                guard let anchor = try Self.fetchItem(familyID: familyID, key: key, db: db) else { return nil }
                sql += " AND (sort_ms, id) < (?, ?)"
                arguments += [anchor.sortMs, anchor.id]
            }
            let items = try Row.fetchAll(cached: db, sql: sql + Self.order + " LIMIT ?", arguments: arguments + [query.limit + 1]).map(
                Self.storedItem)
            return PageRows(items: items, children: try Self.children(query, familyID: familyID, of: items, db: db))
        }
    }
}

/// Prepared statements cached per connection: SQLite parses each distinct SQL text once, not at every call.
extension Database {
    func executeCached(sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

extension Row {
    static func fetchAll(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }

    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension Int64 {
    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> Int64? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension String {
    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> String? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    static func fetchAll(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> [String] {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }
}
