/// One statement written once for both backends: its text with values in place (as interpolations), and the few
/// spellings that differ between PostgreSQL and SQLite as `SQLDialect.Spelling`s, rendered by the connection that runs
/// it. Values are never spliced into the text: each becomes a bound parameter.
package struct SharedSQL: Sendable, ExpressibleByStringInterpolation {
    package enum Part: Sendable {
        case text(String)
        case value(SQLValue)
        /// A list of text values, bound as one parameter and matched by `= ANY` or `IN`.
        case anyOf([String])
        case spelling(SQLDialect.Spelling)
    }

    package private(set) var parts: [Part]

    package init(stringLiteral value: String) { parts = [.text(value)] }

    package init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    package struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []

        package init(literalCapacity: Int, interpolationCount: Int) { parts.reserveCapacity(interpolationCount * 2 + 1) }

        package mutating func appendLiteral(_ literal: String) { parts.append(.text(literal)) }
        package mutating func appendInterpolation(_ value: String) { parts.append(.value(.text(value))) }
        package mutating func appendInterpolation(_ value: Int64) { parts.append(.value(.int(value))) }
        package mutating func appendInterpolation(_ value: Int) { parts.append(.value(.int(Int64(value)))) }
        package mutating func appendInterpolation(_ value: Bool) { parts.append(.value(.bool(value))) }
        /// ` = ANY(…)` on PostgreSQL, ` IN (…)` on SQLite: the expression before it is one of `values`.
        package mutating func appendInterpolation(isAnyOf values: [String]) { parts.append(.anyOf(values)) }
        package mutating func appendInterpolation(_ spelling: SQLDialect.Spelling) { parts.append(.spelling(spelling)) }
    }

    /// The text for `dialect`, its parameters numbered from 1 in the order of `values`.
    package func rendered(for dialect: SQLDialect) -> (text: String, values: [SQLValue]) {
        var text = ""
        var values: [SQLValue] = []
        for part in parts {
            switch part {
            case .text(let literal):
                text += literal
            case .value(let value):
                values.append(value)
                text += dialect.parameter(values.count)
            case .anyOf(let list):
                values.append(.texts(list))
                text += dialect.anyOf(parameter: values.count)
            case .spelling(let spelling):
                text += dialect.spell(spelling)
            }
        }
        return (text, values)
    }
}

/// A value bound to a statement's parameter.
package enum SQLValue: Sendable, Equatable {
    case text(String)
    case int(Int64)
    case bool(Bool)
    case texts([String])
    case null
}

/// The SQL a backend speaks, where PostgreSQL and SQLite differ for the statements they share.
package enum SQLDialect: Sendable {
    case postgres, sqlite

    /// What is spelt differently.
    package enum Spelling: Sendable {
        /// The larger of two values: `GREATEST` or SQLite's two-argument `max`.
        case greatest
        /// ` FOR UPDATE` after a read that locks its rows until the commit; nothing on SQLite, whose single writer
        /// orders every write transaction whole.
        case forUpdate
        /// ` FOR UPDATE OF` these tables' aliases.
        case forUpdateOf(String)
        /// The column that orders a table's rows by insertion, after the given alias (`seq` or SQLite's `rowid`).
        case insertionOrder(String)
    }

    /// The statement that makes the rest of the transaction exclusive among the instances that take `key` (a
    /// transaction-scoped advisory lock on PostgreSQL: safe behind a pooler), waiting for it, or (`wait` false) that
    /// answers one row whose first column says whether it was free. Nil on SQLite, whose single writer makes every
    /// write transaction exclusive.
    package func exclusiveLock(_ key: Int64, wait: Bool) -> SharedSQL? {
        switch self {
        case .postgres: wait ? "SELECT pg_advisory_xact_lock(\(key))" : "SELECT pg_try_advisory_xact_lock(\(key))"
        case .sqlite: nil
        }
    }

    func parameter(_ number: Int) -> String {
        switch self {
        case .postgres: "$\(number)"
        case .sqlite: "?\(number)"
        }
    }

    func anyOf(parameter number: Int) -> String {
        switch self {
        case .postgres: " = ANY($\(number)::text[])"
        case .sqlite: " IN (SELECT value FROM json_each(?\(number)))"
        }
    }

    func spell(_ spelling: Spelling) -> String {
        switch (self, spelling) {
        case (.postgres, .greatest): "GREATEST"
        case (.sqlite, .greatest): "max"
        case (.postgres, .forUpdate): " FOR UPDATE"
        case (.postgres, .forUpdateOf(let tables)): " FOR UPDATE OF \(tables)"
        case (.sqlite, .forUpdate), (.sqlite, .forUpdateOf): ""
        case (.postgres, .insertionOrder(let alias)): "\(alias).seq"
        case (.sqlite, .insertionOrder(let alias)): "\(alias).rowid"
        }
    }
}
