import Foundation
import GRDB

/// A read of one collection of the replica, filtered and sorted by its items' fields, limited: the app's list screens
/// (`contacts named Smith, by first name, 50 at a time`) without reading and decoding the whole collection.
///
/// ```swift
/// let smiths = SyncQuery(Contact.self).filter(\.lastName, .equals, "Smith").sorted(by: \.firstName).limit(50)
/// let page = try client.fetch(smiths)          // page.items: [Contact]; page.skipped: items that did not decode
/// let count = try client.count(smiths)
/// for try await page in client.observe(smiths) { show(page.items) }
/// ```
///
/// Fields are the JSON members of the items, named by key path when the model lists them in `queryFields` (generated
/// types list all of theirs) or by name (`"firstName"`, nested `"address.city"`), compared as SQLite compares
/// JSON values: strings with strings (binary order), numbers with numbers, `true`/`false` as 1/0. An item without
/// the field (or with `null`) matches only `.equals, .null` and `.notEquals` of a value. The replica keeps an index per
/// (collection, field) a query filters or sorts on, made at the first such query.
public struct SyncQuery<M: SyncModel>: Sendable {
    /// How a field is compared with a value.
    public enum Comparison: String, Sendable {
        case equals, notEquals, less, lessOrEqual, greater, greaterOrEqual
        /// A string field holding the value, ignoring ASCII case.
        case contains
    }

    struct Condition: Sendable {
        let field: String
        let comparison: Comparison
        let value: JSONValue
    }

    /// The parent of a child collection's items (a thread's messages); nil elsewhere.
    public let parent: String?
    var conditions: [Condition] = []
    var order: [(field: String, ascending: Bool)] = []
    var window: (limit: Int, offset: Int)?
    /// A key path that names no field of `M.queryFields`: the query fails when it is read, saying which.
    var undeclared: String?

    /// Every visible item of `M`'s collection (of `parent`, for a child collection), by id.
    public init(_ type: M.Type = M.self, parent: String? = nil) {
        self.parent = parent
    }

    /// Only the items whose `field` compares so with `value`.
    public func filter(_ field: String, _ comparison: Comparison, _ value: JSONValue) -> SyncQuery {
        var query = self
        query.conditions.append(Condition(field: field, comparison: comparison, value: value))
        return query
    }

    /// Only the items whose field, named by its key path (`\.lastName`), compares so with `value`. The field is one
    /// the model declares (`M.queryFields`, generated from the data model), so the compiler checks its name.
    public func filter<V>(_ field: KeyPath<M, V>, _ comparison: Comparison, _ value: JSONValue) -> SyncQuery {
        named(field) { $0.filter($1, comparison, value) }
    }

    /// Only the items whose date-time field compares so with `date` (as the server writes dates: RFC 3339 UTC with
    /// milliseconds, which order as text).
    public func filter<V>(_ field: KeyPath<M, V>, _ comparison: Comparison, _ date: Date) -> SyncQuery {
        named(field) { $0.filter($1, comparison, .string(ModelDate.string(date))) }
    }

    /// Sorted by the field `field` names (see `sorted(by:ascending:)` with a name).
    public func sorted<V>(by field: KeyPath<M, V>, ascending: Bool = true) -> SyncQuery {
        named(field) { $0.sorted(by: $1, ascending: ascending) }
    }

    /// `body` applied with the JSON name of `field`, or the query marked failed when `M` does not declare it.
    private func named(_ field: PartialKeyPath<M>, _ body: (SyncQuery, String) -> SyncQuery) -> SyncQuery {
        guard let name = M.queryFields[field] else {
            var query = self
            query.undeclared = query.undeclared ?? "\(field)"
            return query
        }
        return body(self, name)
    }

    /// Sorted by `field` (then by the next `sorted(by:)`, and last by id); items without the field come first
    /// ascending, last descending.
    public func sorted(by field: String, ascending: Bool = true) -> SyncQuery {
        var query = self
        query.order.append((field, ascending))
        return query
    }

    /// At most `count` items, after skipping `offset`.
    public func limit(_ count: Int, offset: Int = 0) -> SyncQuery {
        var query = self
        query.window = (max(0, count), max(0, offset))
        return query
    }
}

/// A query's answer: the items that decoded, in order, and those that did not (kept out of the list, never failing
/// it: an item written by a newer app version, or damaged).
public struct SyncQueryResult<M: SyncModel>: Sendable {
    public let items: [M]
    public let skipped: [SkippedItem]
}

/// An item a query left out because it does not decode as the model.
public struct SkippedItem: Sendable, Equatable {
    public let id: String
    public let reason: String
}

extension SyncClient {
    /// The items of `query`, read now from the replica (unsent local edits applied).
    public func fetch<M: SyncModel>(_ query: SyncQuery<M>) throws -> SyncQueryResult<M> {
        try fetchRows(query).result
    }

    /// `fetch`, with the rows the answer was decoded from (for `observe(_:after:)`).
    func fetchRows<M: SyncModel>(_ query: SyncQuery<M>) throws -> (result: SyncQueryResult<M>, rows: [QueryPlan.Match]) {
        let plan = try QueryPlan(query)
        try ensureIndexes(plan)
        let rows = try replica.pool.read { db in try plan.rows(db) }
        return (Self.decoded(rows, M.self, parent: query.parent), rows)
    }

    /// How many items `query` matches (its limit aside).
    public func count<M: SyncModel>(_ query: SyncQuery<M>) throws -> Int {
        let plan = try QueryPlan(query)
        try ensureIndexes(plan)
        return try replica.pool.read { db in try plan.count(db) }
    }

    /// `query`'s items now, then again each time a sync or a local write changes them (a change to other items of the
    /// collection, or to other collections, yields nothing).
    public func observe<M: SyncModel>(_ query: SyncQuery<M>) -> AsyncThrowingStream<SyncQueryResult<M>, any Error> {
        observe(query, after: nil)
    }

    /// `observe`, from `seen`: rows the caller holds already are not yielded again.
    func observe<M: SyncModel>(_ query: SyncQuery<M>, after seen: [QueryPlan.Match]?) -> AsyncThrowingStream<SyncQueryResult<M>, any Error> {
        let pool = replica.pool
        let collection = M.syncCollection
        let stamps = ValueObservation.tracking { db in try Replica.stamp(db, collection) }.removeDuplicates().values(in: pool)
        let plan = Result { try QueryPlan(query) }
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let plan = try plan.get()
                    try self.ensureIndexes(plan)
                    var last = seen
                    for try await _ in stamps {
                        let rows = try await pool.read { db in try plan.rows(db) }
                        if rows != last {
                            continuation.yield(Self.decoded(rows, M.self, parent: query.parent))
                            last = rows
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    static func decoded<M: SyncModel>(_ rows: [QueryPlan.Match], _ type: M.Type, parent: String?) -> SyncQueryResult<M> {
        var items: [M] = []
        var skipped: [SkippedItem] = []
        for row in rows {
            do {
                items.append(contentsOf: try decode(M.self, texts: [row.text], parent: parent))
            } catch {
                skipped.append(SkippedItem(id: row.id, reason: "\(error)"))
            }
        }
        return SyncQueryResult(items: items, skipped: skipped)
    }

    /// Makes the replica's index of each (collection, field) the plan filters or sorts on, once per client.
    func ensureIndexes(_ plan: QueryPlan) throws {
        let missing = queryIndexes.withLock { made in plan.indexes.filter { made.insert($0.name).inserted } }
        guard !missing.isEmpty else { return }
        do {
            try replica.pool.write { db in for index in missing { try db.execute(sql: index.sql) } }
        } catch {
            queryIndexes.withLock { made in for index in missing { made.remove(index.name) } }
            throw error
        }
    }
}

/// A query as SQL over the replica's `items`: each field read as `json_extract` of the visible JSON, the expression
/// the per-field index is built on, so that SQLite uses it.
struct QueryPlan: Sendable {
    struct Match: Equatable, Sendable {
        let id: String
        let text: String
    }

    struct Index: Sendable {
        let name: String
        let sql: String
    }

    let whereSQL: String
    let orderSQL: String
    let limitSQL: String
    let arguments: StatementArguments
    let indexes: [Index]

    init<M: SyncModel>(_ query: SyncQuery<M>) throws {
        let collection = M.collectionName
        guard Self.isName(collection) else { throw SyncClientError.invalid("not a collection name: \(collection)") }
        if let undeclared = query.undeclared {
            throw SyncClientError.invalid("\(undeclared) is not a field \(M.self).queryFields declares")
        }
        var clauses = ["collection = '\(collection)'", "parent = ?", "localDeleted = 0", "COALESCE(local, server) IS NOT NULL"]
        var arguments: [(any DatabaseValueConvertible)?] = [query.parent ?? ""]
        var fields: [String] = []
        for condition in query.conditions {
            let field = try Self.expression(condition.field)
            fields.append(condition.field)
            switch (condition.comparison, Self.bound(condition.value)) {
            case (.equals, nil): clauses.append("\(field) IS NULL")
            case (.notEquals, nil): clauses.append("\(field) IS NOT NULL")
            case (.contains, let value?):
                guard case .string = condition.value else { throw SyncClientError.invalid(".contains compares with a string") }
                clauses.append("instr(lower(\(field)), lower(?)) > 0")
                arguments.append(value)
            case (.equals, let value?):
                clauses.append("\(field) = ?")
                arguments.append(value)
            case (.notEquals, let value?):
                clauses.append("\(field) IS NOT ?")
                arguments.append(value)
            case (let comparison, let value?):
                let op = [.less: "<", .lessOrEqual: "<=", .greater: ">", .greaterOrEqual: ">="][comparison] ?? "="
                clauses.append("\(field) \(op) ?")
                arguments.append(value)
            case (let comparison, nil):
                throw SyncClientError.invalid("\(comparison) compares with a value, not null")
            }
        }
        var order: [String] = []
        for (field, ascending) in query.order {
            order.append("\(try Self.expression(field)) \(ascending ? "ASC" : "DESC")")
            fields.append(field)
        }
        order.append("id")
        whereSQL = clauses.joined(separator: " AND ")
        orderSQL = order.joined(separator: ", ")
        limitSQL = query.window.map { " LIMIT \($0.limit) OFFSET \($0.offset)" } ?? ""
        self.arguments = StatementArguments(arguments)
        var indexes: [Index] = []
        for field in Set(fields).sorted() {
            let name = "query_\(collection)_\(field.replacingOccurrences(of: ".", with: "__"))"
            indexes.append(
                Index(
                    name: name,
                    sql: """
                        CREATE INDEX IF NOT EXISTS \(name) ON items (collection, parent, \(try Self.expression(field)), id)
                        WHERE collection = '\(collection)'
                        """))
        }
        self.indexes = indexes
    }

    func rows(_ db: Database) throws -> [Match] {
        try GRDB.Row.fetchAll(
            db, sql: "SELECT id, COALESCE(local, server) FROM items WHERE \(whereSQL) ORDER BY \(orderSQL)\(limitSQL)", arguments: arguments
        ).map { Match(id: $0[0], text: $0[1]) }
    }

    func count(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM items WHERE \(whereSQL)", arguments: arguments) ?? 0
    }

    /// `json_extract` of a field path (`name`, `address.city`): each part 1 to 64 letters, digits or `_`, not a
    /// digit first, so nothing of it can reach the SQL but a path.
    static func expression(_ field: String) throws -> String {
        let parts = field.split(separator: ".", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ isName(String($0)) }) else {
            throw SyncClientError.invalid("not a field name: \(field) (letters, digits and _, parts joined by .)")
        }
        return "json_extract(COALESCE(local, server), '$.\(field)')"
    }

    static func isName(_ text: String) -> Bool {
        guard let first = text.utf8.first, (1...64).contains(text.utf8.count), !(48...57).contains(first) else { return false }
        return text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
    }

    /// A JSON value as SQLite's `json_extract` gives it: text, integer, real, 1/0 for booleans; nil for null. Arrays
    /// and objects compare as their JSON text.
    static func bound(_ value: JSONValue) -> (any DatabaseValueConvertible)? {
        switch value {
        case .null: return nil
        case .bool(let flag): return flag ? 1 : 0
        case .string(let text): return text
        case .number(let number): return number.int64Value.map { $0 as any DatabaseValueConvertible } ?? number.doubleValue
        case .array, .object: return value.text
        }
    }
}
