import GRDB

/// Statements a sync runs every time, from the connection's statement cache: SQLite parses each distinct text once,
/// not at every sync (parsing was most of what a sync with nothing to apply cost the replica).
extension Database {
    func executeCached(sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

extension DatabaseValueConvertible {
    static func fetchOne(cached db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}
