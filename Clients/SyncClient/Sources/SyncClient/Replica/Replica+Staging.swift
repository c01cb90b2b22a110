import Foundation
import GRDB

extension Replica {
    /// The rows of a list replaced whole (a first sync), gathered in a table of their own in the order they arrive and
    /// stored in `items` in id order by the apply.
    ///
    /// The server sends a list in modification order, so its ids come in no order: stored one by one, each row lands
    /// at a random place of the replica's two indexes, and past the page cache every insert reads and writes pages
    /// all over the file. Appended to a table without an index, then sorted by SQLite's sorter (bounded memory,
    /// spilling to temporary files), the rows reach the indexes in key order. The result is the one `storeServer`
    /// gives row by row: the same upsert, a later row of an id over an earlier one.
    ///
    /// A sync gathers them while its answer downloads, in a staging database of its own (`StagingArea.file`, beside
    /// the answer's file), which the replica's writer attaches for the apply only: nothing of the answer is in the
    /// replica before its one transaction.
    final class Staging {
        private let insert: Statement
        private let insertMany: Statement
        /// Rows not yet inserted: they go `batch` at a time, one statement each (a statement's own cost, in SQLite and
        /// in GRDB, was about a third of a row's staging).
        private var pending: [(any DatabaseValueConvertible)?] = []
        private static let batch = 64

        /// A new table `table` in `schema` of `db` (emptied if it exists).
        init(_ db: Database, schema: String, table: String) throws {
            try db.execute(
                sql:
                    "CREATE TABLE IF NOT EXISTS \(schema).\(table) (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, server TEXT NOT NULL, sortKey TEXT NOT NULL)"
            )
            try db.execute(sql: "DELETE FROM \(schema).\(table)")
            let values = Array(repeating: "(?, ?, ?)", count: Self.batch).joined(separator: ", ")
            insert = try db.makeStatement(sql: "INSERT INTO \(schema).\(table) (id, server, sortKey) VALUES (?, ?, ?)")
            insertMany = try db.makeStatement(sql: "INSERT INTO \(schema).\(table) (id, server, sortKey) VALUES \(values)")
            pending.reserveCapacity(3 * Self.batch)
        }

        /// Adds a row (inserted with the next ones, in their order; `flush` inserts the last ones).
        func add(_ row: ServerRow) throws {
            pending.append(row.id)
            pending.append(row.text)
            pending.append(row.sortKey)
            guard pending.count == 3 * Self.batch else { return }
            insertMany.setUncheckedArguments(StatementArguments(pending))
            try insertMany.execute()
            pending.removeAll(keepingCapacity: true)
        }

        /// Inserts the rows not inserted yet.
        func flush() throws {
            for start in stride(from: 0, to: pending.count, by: 3) {
                insert.setUncheckedArguments(StatementArguments(pending[start..<start + 3]))
                try insert.execute()
            }
            pending.removeAll(keepingCapacity: true)
        }

        /// Stores the rows gathered in `schema.table` as top-level items of `collection`, inside the caller's transaction.
        static func store(_ db: Database, from schema: String, _ table: String, _ collection: SyncCollection) throws {
            // `WHERE true`: SQLite's grammar needs a WHERE before an upsert's ON CONFLICT after a SELECT. Not from the
            // statement cache: the staging database is attached for one apply.
            try db.execute(
                sql: """
                    INSERT INTO items (collection, parent, id, server, etag, sortKey)
                    SELECT ?, '', id, server, NULL, sortKey FROM \(schema).\(table) WHERE true ORDER BY id, seq
                    ON CONFLICT (collection, parent, id) DO UPDATE SET server = excluded.server,
                        etag = COALESCE(excluded.etag, CASE WHEN items.server = excluded.server THEN items.etag END),
                        sortKey = excluded.sortKey
                    """, arguments: [collection.rawValue])
        }
    }
}

/// Where a sync's answer gathers the rows of the lists it replaces while it is read (`Replica.Staging`), and where the
/// apply reads them from.
final class StagingArea {
    private enum Place {
        /// A database of its own at `path`, opened at the first replaced list (a delta stages nothing, and makes no
        /// file); the replica's writer attaches it as `syncStaging` for the apply.
        case file(path: String, protection: ReplicaFileProtection?)
        /// Temporary tables of the connection that applies the answer, the same one (an answer read inside its apply).
        case temporary(Database)
    }

    private let place: Place
    private var queue: DatabaseQueue?
    private(set) var tables: [String] = []

    /// The schema of the tables as the apply's connection names them.
    static let attachedSchema = "syncStaging"

    private init(_ place: Place) { self.place = place }

    /// A staging database at `path`, created only if a list is staged.
    static func file(_ path: String, protection: ReplicaFileProtection?) -> StagingArea {
        StagingArea(.file(path: path, protection: protection))
    }

    /// Temporary tables of `db`, the connection that also applies the answer.
    static func temporary(_ db: Database) -> StagingArea { StagingArea(.temporary(db)) }

    /// The schema the apply reads the tables from.
    var schema: String {
        switch place {
        case .file: Self.attachedSchema
        case .temporary: "temp"
        }
    }

    /// The staging database's file, once a list was staged in it.
    var path: String? {
        guard case .file(let path, _) = place, queue != nil else { return nil }
        return path
    }

    /// Gathers rows in a new table (`body` adds them); its name.
    func stage(_ body: (Replica.Staging) throws -> Void) throws -> String {
        let table = "list\(tables.count)"
        switch place {
        case .temporary(let db):
            let staging = try Replica.Staging(db, schema: "temp", table: "syncStaging_" + table)
            try body(staging)
            try staging.flush()
            tables.append("syncStaging_" + table)
            return "syncStaging_" + table
        case .file(let path, let protection):
            let queue = try self.queue ?? Self.open(path, protection: protection)
            self.queue = queue
            try queue.write { db in
                let staging = try Replica.Staging(db, schema: "main", table: table)
                try body(staging)
                try staging.flush()
            }
            tables.append(table)
            return table
        }
    }

    /// Closes the staging database (the apply attaches it anew); tables in a temporary schema are dropped (their pages
    /// go back to the connection's temporary file, `temp.auto_vacuum`).
    func close() throws {
        switch place {
        case .temporary(let db):
            for table in tables { try db.execute(sql: "DROP TABLE IF EXISTS temp.\(table)") }
        case .file:
            try queue?.close()
        }
    }

    /// Removes a staging database's files.
    static func remove(_ path: String) {
        for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// A staging database: created for the owner only, with the replica's file protection; no journal and no sync to
    /// disk (it is thrown away whenever the sync does not complete), large pages (few reads and writes).
    private static func open(_ path: String, protection: ReplicaFileProtection?) throws -> DatabaseQueue {
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw SyncClientError.local("cannot create \(path)")
        }
        try protection?.apply(to: [path])
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}
