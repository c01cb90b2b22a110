import Foundation
import GRDB

/// The rules of protocol §3-§5 applied to the replica, each called inside the one write transaction of a sync.
extension Replica {
    /// A list answer (§3: `{"date", "sync", "updated", "deleted"}`): `sync: false` replaces the list; then deletes,
    /// then upserts.
    static func apply(_ db: Database, _ collection: ServerModel.Collection, _ answer: SyncAnswer) throws {
        if !answer.sync { try clearServer(db, collection) }
        for id in answer.deleted { try removeServer(db, collection, id: id) }
        for item in answer.updated { try storeServer(db, collection, item) }
    }

    /// A paginated answer (§4): `sync: false` or `crop: true` keeps only the fresh page; each parent's children are
    /// replaced by the ones it carries, with their `nomore`; the list's `nomore` stored.
    static func apply(_ db: Database, _ collection: ServerModel.Collection, _ answer: PagedSyncAnswer) throws {
        if !answer.sync || answer.crop { try clearServer(db, collection) }
        for id in answer.deleted { try removeServer(db, collection, id: id) }
        for item in answer.updated { try storeParent(db, collection, item) }
        try setFlag(db, MetaKey.nomore(collection.name), answer.nomore)
    }

    /// Stores an item of a paginated list and replaces its children with the newest ones it carries.
    static func storeParent(_ db: Database, _ collection: ServerModel.Collection, _ object: JSONObject) throws {
        try storeServer(db, collection, object)
        guard let id = object["id"]?.stringValue, let child = collection.childCollection,
            let children = object[child.name.rawValue]?.arrayValue
        else { return }
        try clearServer(db, child, parent: id)
        for item in children {
            if let item = item.objectValue { try storeServer(db, child, parent: id, item) }
        }
        try setFlag(db, MetaKey.nomore(child.name, parent: id), object["nomore"]?.boolValue ?? false)
    }

    /// A page of `loadMore` (`{"items", "nomore"}`) of a paginated list or of one parent's children: appended below
    /// what the replica holds.
    static func apply(_ db: Database, _ list: ServerModel.Collection, parent: String?, _ answer: PageAnswer) throws {
        for item in answer.items {
            if list.kind == .child {
                try storeServer(db, list, parent: parent ?? "", item)
            } else {
                try storeParent(db, list, item)
            }
        }
        try setFlag(db, MetaKey.nomore(list.name, parent: parent), answer.nomore)
    }

    /// A bundle answer (§5, as `familysync`): `{"date", "sync"}`, each singleton under its name (null: unchanged), each
    /// list as `{"updated", "deleted"}`; `sync: false` replaces all of them. Answers the date and `sync`.
    static func applyBundle(_ db: Database, _ members: [ServerModel.Collection], _ answer: JSONObject) throws -> (date: String, sync: Bool) {
        guard let date = answer["date"]?.stringValue, let sync = answer["sync"]?.boolValue else {
            throw SyncClientError.invalidAnswer("a bundle answer needs date and sync")
        }
        if !sync {
            for collection in members { try clearServer(db, collection) }
        }
        for collection in members {
            let value = answer[collection.name.rawValue] ?? .null
            if collection.kind == .singleton {
                guard let item = value.objectValue else { continue }
                try clearServer(db, collection)
                try storeServer(db, collection, item)
                continue
            }
            guard let delta = value.objectValue else {
                if value == .null { continue }
                throw SyncClientError.invalidAnswer("\(collection.name) is not {\"updated\", \"deleted\"}")
            }
            for id in delta["deleted"]?.arrayValue ?? [] {
                if let id = id.stringValue { try removeServer(db, collection, id: id) }
            }
            for item in delta["updated"]?.arrayValue ?? [] {
                if let item = item.objectValue { try storeServer(db, collection, item) }
            }
        }
        return (date, sync)
    }
}

/// The rules of `apply(_:_:_: SyncAnswer)` for an answer read piece by piece, in two steps: read (and staged) while it
/// downloads, without the replica; applied once it is whole, in the sync's one transaction.
extension Replica {
    /// A full-list answer as read, not yet applied.
    struct StagedList: Sendable {
        var collection: ServerModel.Collection
        var date: String
        var sync: Bool
        var deleted: [String]
        /// Whether `deleted` came before the items (a replaced list then applies it right after the clear).
        var deletedFirst: Bool
        /// The staging table holding the rows of a replaced list (`sync: false` before its items).
        var table: String?
        /// The rows of any other answer (a delta, whose deletions go first), held until it is applied.
        var rows: [ServerRow]
    }

    /// Reads a full-list answer (`{"date", "sync", "updated", "deleted"}`) from `reader` piece by piece: with `sync:
    /// false` (a first sync) each item goes to a table of `staging` as it arrives, never held in memory; an answer with
    /// `sync: true` (a delta) keeps its rows. Throws for an answer that is not a full-list answer.
    static func stageStreamed(
        _ collection: ServerModel.Collection, _ reader: inout JSONByteReader, _ staging: StagingArea
    ) throws -> StagedList {
        var date: String?
        var sync: Bool?
        var deleted: [String]?
        var held: [ServerRow] = []
        var table: String?
        var deletedFirst = false
        var sawUpdated = false
        var canonical = CanonicalItem()
        try reader.beginObject()
        var firstMember = true
        while let key = try reader.nextKey(&firstMember) {
            switch key {
            case "date": date = try reader.readString()
            case "sync": sync = try reader.readBool()
            case "deleted": deleted = try reader.decode([String].self)
            case "updated":
                guard !sawUpdated else { throw SyncClientError.invalidAnswer("\"updated\" twice") }
                sawUpdated = true
                deletedFirst = deleted != nil
                if sync == false {
                    // The list is replaced: its items gathered as they arrive, stored in id order by the apply.
                    table = try staging.stage { staged in
                        try reader.beginArray()
                        var firstItem = true
                        while try reader.nextElement(&firstItem) {
                            let row = try reader.withValue { bytes in try serverRow(collection, bytes, &canonical) }
                            if let row { try staged.add(row) }
                        }
                    }
                } else {
                    try reader.beginArray()
                    var firstItem = true
                    while try reader.nextElement(&firstItem) {
                        let row = try reader.withValue { bytes in try serverRow(collection, bytes, &canonical) }
                        if let row { held.append(row) }
                    }
                }
            default: try reader.skipValue()
            }
        }
        guard let date, let sync, let deleted, sawUpdated else {
            throw SyncClientError.invalidAnswer("a full-list answer needs date, sync, updated and deleted")
        }
        return StagedList(
            collection: collection, date: date, sync: sync, deleted: deleted, deletedFirst: deletedFirst, table: table, rows: held)
    }

    /// Applies a list answer as `stageStreamed` read it, inside the caller's transaction, with the same result as
    /// `apply(_:_:_: SyncAnswer)`; a staged list's rows are read from `schema`.
    static func applyStaged(_ db: Database, _ list: StagedList, schema: String) throws {
        let collection = list.collection
        guard let table = list.table else {
            if !list.sync { try clearServer(db, collection) }
            for id in list.deleted { try removeServer(db, collection, id: id) }
            let upsert = try upsertStatement(db)
            for row in list.rows { try storeServer(db, collection.name, row, upsert: upsert) }
            return
        }
        try clearServer(db, collection)
        if list.deletedFirst {
            for id in list.deleted { try removeServer(db, collection, id: id) }
        }
        try Staging.store(db, from: schema, table, collection.name)
        if !list.deletedFirst {
            // Deletions sent after the items (a `sync: false` answer has none): applied as if first. An id this answer
            // also stored (its row holds a server version, which the clear removed from every other row) keeps it.
            for id in list.deleted {
                let stored = try Bool.fetchOne(
                    db, sql: "SELECT server IS NOT NULL FROM items WHERE collection = ? AND parent = '' AND id = ?",
                    arguments: [collection.name.rawValue, id])
                if stored != true { try removeServer(db, collection, id: id) }
            }
        }
    }

    /// The row of one item from the bytes it came in: straight from them when `CanonicalItem` vouches for the
    /// result, else through `JSONValue` (`serverRow(_:_:)`, the reference). Nil for an item without a string id.
    static func serverRow(
        _ collection: ServerModel.Collection, _ bytes: ArraySlice<UInt8>, _ canonical: inout CanonicalItem
    ) throws -> ServerRow? {
        if canonical.make(bytes, sortField: collection.sortField, children: collection.children?.rawValue) {
            return ServerRow(id: canonical.id, text: String(decoding: canonical.text, as: UTF8.self), sortKey: canonical.sortKey)
        }
        guard let object = try JSONValue.parse(Data(bytes)).objectValue else { throw SyncClientError.invalidAnswer("an item that is not an object") }
        return serverRow(collection, object)
    }
}

extension SyncClientError {
    /// An answer that does not say what the protocol says it must.
    static func invalidAnswer(_ detail: String) -> SyncClientError {
        .server(status: 200, code: .invalidAnswer, detail: detail)
    }
}
