import Foundation
import GRDB

extension SyncClient {
    /// Creates or replaces an item locally at once, and queues its PUT (in the same transaction); the push leaves
    /// by itself (`configuration.pushDelay`). The `id` and the parent come from the arguments; server-set fields in
    /// `json` are ignored by the server. The singletons take their id from the session: the family's id for
    /// `family`, the account's for `settings`.
    public func save(_ collection: SyncCollection, id: String, parent: String? = nil, json: JSONObject) async throws {
        let layout = try writable(collection, parent: parent)
        let id = itemID(layout, id)
        try await replica.pool.write { db in try Replica.save(db, layout, id: id, parent: parent ?? "", json) }
        try refreshCounts()
        schedulePush()
    }

    /// Saves a typed item (`save(Contact(id: UUID().uuidString, firstName: "Ann"))`). For an item the server already
    /// has, only the fields that differ from the replica's version are sent, as a JSON Merge Patch (protocol §2): a
    /// field a newer app version added, or one another device changed since, is never erased by this save.
    public func save<M: SyncModel>(_ model: M) async throws {
        var encoded = try JSONValue(encoding: model).objectValue ?? [:]
        encoded[parentKey] = nil
        let object = encoded
        let collection = M.syncCollection
        let parent = model.parentID
        let layout = try writable(collection, parent: parent)
        let id = itemID(layout, model.id)
        try await replica.pool.write { db in
            let onServer = try Bool.fetchOne(
                db, sql: "SELECT server IS NOT NULL FROM items WHERE collection = ? AND parent = ? AND id = ?",
                arguments: [collection.rawValue, parent ?? "", id])
            guard onServer == true, let current = try Replica.visibleItem(db, collection, id: id, parent: parent) else {
                try Replica.save(db, layout, id: id, parent: parent ?? "", object)
                return
            }
            let changes = Self.changedFields(object, from: current, serverSet: layout.serverSetFields)
            if !changes.isEmpty { try Replica.patch(db, layout, id: id, parent: parent ?? "", changes) }
        }
        try refreshCounts()
        schedulePush()
    }

    /// The members of `object` whose value differs from `current` (server-set fields and `id` aside). Two strings
    /// that are the same instant (`2026-01-01T00:00:00Z` and `…00.000Z`) are the same value.
    static func changedFields(_ object: JSONObject, from current: JSONObject, serverSet: Set<String>) -> JSONObject {
        var changes: JSONObject = [:]
        for (key, value) in object where !serverSet.contains(key) {
            let was = current[key] ?? .null
            if value == was { continue }
            if case .string(let a) = value, case .string(let b) = was, let x = ModelDate.date(a), let y = ModelDate.date(b), x == y { continue }
            changes[key] = value
        }
        return changes
    }

    /// A singleton's id is the session's: the family's for a family-scoped one, the account's for the other.
    func itemID(_ collection: ServerModel.Collection, _ id: String) -> String {
        guard collection.kind == .singleton, let session = currentSession else { return id }
        return collection.scope == "account" ? session.accountID : session.familyID
    }

    /// Deletes an item locally at once, and queues its DELETE (an item never pushed simply disappears).
    public func delete(_ collection: SyncCollection, id: String, parent: String? = nil) async throws {
        let layout = try writable(collection, parent: parent)
        guard layout.kind != .singleton else { throw SyncClientError.invalid("\(collection.rawValue) cannot be deleted") }
        try await replica.pool.write { db in try Replica.delete(db, collection, id: id, parent: parent ?? "") }
        try refreshCounts()
        schedulePush()
    }

    /// The model's entry for a collection the app writes, checked: a collection of the model, not read-only, with a
    /// parent exactly when it is a child. With no model known yet (a replica of SDK 0.2.0 that has not synced since),
    /// only the parent is taken as given: the server checks the rest when the write is pushed.
    func writable(_ collection: SyncCollection, parent: String?) throws -> ServerModel.Collection {
        guard collection != .accounts else { throw SyncClientError.invalid("accounts are read-only") }
        guard knownModel != nil else {
            return ServerModel.Collection(name: collection, kind: parent == nil ? .list : .child)
        }
        let layout = try modelCollection(collection)
        guard !layout.isReadOnly else { throw SyncClientError.invalid("\(collection) is read-only") }
        guard (layout.kind == .child) == (parent != nil) else {
            throw SyncClientError.invalid("\(collection) \(layout.kind == .child ? "need a parent (--parent ID)" : "take no parent")")
        }
        return layout
    }
}
