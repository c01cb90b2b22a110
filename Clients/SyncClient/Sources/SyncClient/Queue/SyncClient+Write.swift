import Foundation
import GRDB

extension SyncClient {
    /// Creates or replaces an item locally at once, and queues its PUT (in the same transaction). The `id` and the
    /// parent come from the arguments; server-set fields in `json` are ignored by the server. The singletons take
    /// their id from the session: the family's id for `family`, the account's for `settings`.
    public func save(_ collection: SyncCollection, id: String, parent: String? = nil, json: JSONObject) async throws {
        try Self.checkWritable(collection, parent: parent)
        let session = currentSession
        let id =
            switch collection {
            case .family: session?.familyID ?? id
            case .settings: session?.accountID ?? id
            default: id
            }
        try await replica.pool.write { db in try Replica.save(db, collection, id: id, parent: parent ?? "", json) }
        try refreshCounts()
    }

    /// Saves a typed item (`save(Contact(id: UUID().uuidString, firstName: "Ann"))`).
    public func save<M: SyncModel>(_ model: M) async throws {
        var object = try JSONValue(encoding: model).objectValue ?? [:]
        object[parentKey] = nil
        try await save(try M.syncCollection(), id: model.id, parent: model.parentID, json: object)
    }

    /// Deletes an item locally at once, and queues its DELETE (an item never pushed simply disappears).
    public func delete(_ collection: SyncCollection, id: String, parent: String? = nil) async throws {
        guard collection.kind != .singleton else { throw SyncClientError.invalid("\(collection.rawValue) cannot be deleted") }
        try Self.checkWritable(collection, parent: parent)
        try await replica.pool.write { db in try Replica.delete(db, collection, id: id, parent: parent ?? "") }
        try refreshCounts()
    }

    static func checkWritable(_ collection: SyncCollection, parent: String?) throws {
        guard collection != .accounts else { throw SyncClientError.invalid("accounts are read-only") }
        guard (collection.parentCollection != nil) == (parent != nil) else {
            throw SyncClientError.invalid(
                "\(collection.rawValue) \(collection.parentCollection == nil ? "take no parent" : "need a parent (--parent ID)")")
        }
    }
}
