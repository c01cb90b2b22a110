import GRDB

/// The rules of protocol §3-§5 applied to the replica: called inside one write transaction per sync.
extension Replica {
    /// A full-list answer (`ctcsync`, `evtsync`, `plcsync`): `sync: false` replaces the list; then deletes, then
    /// upserts.
    static func applyFullList(_ db: Database, _ collection: SyncCollection, _ answer: JSONValue) throws {
        if answer["sync"]?.boolValue == false { try clearServer(db, collection) }
        for id in answer["deleted"]?.arrayValue ?? [] {
            if let id = id.stringValue { try removeServer(db, collection, id: id) }
        }
        for item in answer["updated"]?.arrayValue ?? [] {
            if let item = item.objectValue { try storeServer(db, collection, item) }
        }
    }

    /// A paginated answer (`msgsyncthread`, `wallsync`): `sync: false` or `crop: true` keeps only the fresh page;
    /// each parent's children are replaced by the ones it carries, with their `nomore`.
    static func applyPaginated(_ db: Database, _ collection: SyncCollection, _ answer: JSONValue) throws {
        let replace = answer["sync"]?.boolValue == false || answer["crop"]?.boolValue == true
        if replace { try clearServer(db, collection) }
        for id in answer["deleted"]?.arrayValue ?? [] {
            if let id = id.stringValue { try removeServer(db, collection, id: id) }
        }
        for item in answer["updated"]?.arrayValue ?? [] {
            guard let object = item.objectValue else { continue }
            try storeParent(db, collection, object)
        }
        try setMeta(db, "nomore.\(collection.rawValue)", (answer["nomore"]?.boolValue ?? false) ? "1" : "0")
    }

    /// Stores a thread or wall post and replaces its children with the newest ones it carries.
    static func storeParent(_ db: Database, _ collection: SyncCollection, _ object: JSONObject) throws {
        try storeServer(db, collection, object)
        guard let id = object["id"]?.stringValue, let child = collection.childCollection,
            let children = object[child.rawValue]?.arrayValue
        else { return }
        try clearServer(db, child, parent: id)
        for message in children {
            if let message = message.objectValue { try storeServer(db, child, parent: id, message) }
        }
        try setMeta(db, "nomore.\(child.rawValue).\(id)", (object["nomore"]?.boolValue ?? false) ? "1" : "0")
    }

    /// A page of `loadMore` (`{"items", "nomore"}`): appended below what the replica holds.
    static func applyPage(_ db: Database, _ list: PagedList, parent: String?, _ answer: JSONValue) throws {
        for item in answer["items"]?.arrayValue ?? [] {
            guard let object = item.objectValue else { continue }
            switch list {
            case .threads, .wall: try storeParent(db, list.collection, object)
            case .messages, .comments: try storeServer(db, list.collection, parent: parent ?? "", object)
            }
        }
        let key = parent.map { "nomore.\(list.rawValue).\($0)" } ?? "nomore.\(list.rawValue)"
        try setMeta(db, key, (answer["nomore"]?.boolValue ?? false) ? "1" : "0")
    }

    /// `familysync` (protocol §5): the family and the caller's settings when present, members and accounts as deltas.
    static func applyFamily(_ db: Database, _ answer: JSONValue) throws {
        let full = answer["sync"]?.boolValue == false
        if let family = answer["family"]?.objectValue {
            if full { try clearServer(db, .family) }
            try storeServer(db, .family, family)
        }
        if let settings = answer["settings"]?.objectValue {
            if full { try clearServer(db, .settings) }
            try storeServer(db, .settings, settings)
        }
        for (key, collection) in [("members", SyncCollection.members), ("accounts", SyncCollection.accounts)] {
            if full { try clearServer(db, collection) }
            for id in answer[key]?["deleted"]?.arrayValue ?? [] {
                if let id = id.stringValue { try removeServer(db, collection, id: id) }
            }
            for item in answer[key]?["updated"]?.arrayValue ?? [] {
                if let item = item.objectValue { try storeServer(db, collection, item) }
            }
        }
    }
}
