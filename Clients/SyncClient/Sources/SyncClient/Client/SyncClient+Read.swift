import Foundation
import GRDB

extension SyncClient {
    /// The items of a collection as the app sees them: the server's JSON with unsent local edits applied, in the
    /// server's order for paginated and child collections (newest first), by id otherwise. Children need their
    /// `parent` (the thread or post id). Any collection of the server's model, by name.
    public func items(_ collection: SyncCollection, parent: String? = nil) throws -> [JSONObject] {
        let sorted = isSorted(collection)
        return try replica.pool.read { db in try Replica.visibleItems(db, collection, parent: parent, sorted: sorted) }
    }

    /// Whether the model sorts `collection` by a field (nil while no model is known).
    func isSorted(_ collection: SyncCollection) -> Bool? {
        knownModel.map { $0[collection]?.sortField != nil }
    }

    /// One item, as `items` shows it (nil when absent or deleted locally). For `family` and `settings` the id is the
    /// family's or account's id.
    public func item(_ collection: SyncCollection, id: String, parent: String? = nil) throws -> JSONObject? {
        try replica.pool.read { db in try Replica.visibleItem(db, collection, id: id, parent: parent) }
    }

    /// The items of a model's collection, decoded (`all(Contact.self)`, `all(Message.self, parent: threadID)`).
    public func all<M: SyncModel>(_ type: M.Type, parent: String? = nil) throws -> [M] {
        let collection = M.syncCollection
        let sorted = isSorted(collection)
        let texts = try replica.pool.read { db in try Replica.visibleTexts(db, collection, parent: parent, sorted: sorted) }
        return try Self.decode(M.self, texts: texts, parent: parent)
    }

    /// Decodes stored texts straight into models (100,000 contacts: no `JSONValue` tree, no second encoding); a child
    /// learns its parent's id as `_parent`, put first in its object.
    static func decode<M: SyncModel>(_ type: M.Type, texts: [String], parent: String?) throws -> [M] {
        let decoder = JSONDecoder()
        var prefix: [UInt8] = []
        if let parent {
            prefix = Array(",\"\(parentKey)\":".utf8) + Array(JSONValue.string(parent).text.utf8)
        }
        return try texts.map { text in
            guard !prefix.isEmpty, text.utf8.first == UInt8(ascii: "{") else { return try decoder.decode(M.self, from: Data(text.utf8)) }
            // `{` + `"_parent":"…"` + `,` + the rest (an empty object gets no comma).
            var bytes: [UInt8] = [UInt8(ascii: "{")]
            bytes += prefix.dropFirst()
            let rest = text.utf8.dropFirst()
            if rest.first != UInt8(ascii: "}") { bytes.append(UInt8(ascii: ",")) }
            bytes += rest
            return try decoder.decode(M.self, from: Data(bytes))
        }
    }

    /// Decodes a stored item into its model (a child learns its parent's id).
    static func decode<M: SyncModel>(_ type: M.Type, _ object: JSONObject, parent: String?) throws -> M {
        var object = object
        if let parent { object[parentKey] = .string(parent) }
        return try JSONValue.object(object).decode(M.self)
    }

    /// Whether the replica holds the whole list (`nomore`): a paginated list, or the children of one parent.
    public func hasAll(_ list: SyncCollection, parent: String? = nil) -> Bool {
        (try? replica.pool.read { db in try Replica.flag(db, MetaKey.nomore(list, parent: parent)) }) ?? false
    }

    /// Any query on the replica, observed: a fresh value after every sync and every local write (GRDB
    /// `ValueObservation`), for SwiftUI (`for try await value in client.observe { … }`) or any async consumer.
    public func observe<T: Sendable>(_ fetch: @escaping @Sendable (Database) throws -> T) -> AsyncValueObservation<T> {
        ValueObservation.tracking(fetch).values(in: replica.pool)
    }

    /// The visible items of a collection, observed: the current items first, then a fresh value each time a sync or
    /// a local write changes that collection (writes to other collections wake nothing but a one-row read), never the
    /// same items twice in a row.
    public func observeItems(_ collection: SyncCollection, parent: String? = nil) -> AsyncThrowingStream<[JSONObject], any Error> {
        let pool = replica.pool
        let sorted = isSorted(collection)
        // The collection's stamp (bumped by triggers on every change of its items) is all the observation reads.
        let stamps = ValueObservation.tracking { db in try Replica.stamp(db, collection) }.removeDuplicates().values(in: pool)
        return AsyncThrowingStream { continuation in
            let task = Task {
                var last: [JSONObject]?
                do {
                    for try await _ in stamps {
                        let items = try await pool.read { db in try Replica.visibleItems(db, collection, parent: parent, sorted: sorted) }
                        if items != last {
                            continuation.yield(items)
                            last = items
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

    /// The items of a model's collection, decoded and observed (as `observeItems`).
    public func observeAll<M: SyncModel>(_ type: M.Type, parent: String? = nil) -> AsyncThrowingStream<[M], any Error> {
        let items = observeItems(M.syncCollection, parent: parent)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await objects in items { continuation.yield(try objects.map { try Self.decode(M.self, $0, parent: parent) }) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The writes waiting to reach the server, in push order.
    public func pendingOperations() throws -> [PendingOperation] { try replica.pool.read { db in try Replica.pending(db) } }

    /// The writes the server refused for good, oldest first.
    public func failedOperations() throws -> [FailedOperation] { try replica.pool.read { db in try Replica.failed(db) } }

    /// Forgets the failed writes (after the app showed them).
    public func clearFailedOperations() async throws {
        try await replica.pool.write { db in try db.execute(sql: "DELETE FROM failed") }
        try refreshCounts()
    }
}
