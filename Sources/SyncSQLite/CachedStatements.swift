import GRDB
import SyncAPI

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
