import GRDB

/// The rules of protocol §3-§5 applied to the replica, each called inside the one write transaction of a sync.
extension Replica {
    /// A full-list answer (`ctcsync`, `evtsync`, `plcsync`): `sync: false` replaces the list; then deletes, then
    /// upserts.
    static func apply(_ db: Database, _ collection: SyncCollection, _ answer: SyncAnswer) throws {
        if !answer.sync { try clearServer(db, collection) }
        for id in answer.deleted { try removeServer(db, collection, id: id) }
        for item in answer.updated { try storeServer(db, collection, item) }
    }

    /// A paginated answer (`msgsyncthread`, `wallsync`): `sync: false` or `crop: true` keeps only the fresh page;
    /// each parent's children are replaced by the ones it carries, with their `nomore`; the list's `nomore` stored.
    static func apply(_ db: Database, _ collection: SyncCollection, _ answer: PagedSyncAnswer) throws {
        if !answer.sync || answer.crop { try clearServer(db, collection) }
        for id in answer.deleted { try removeServer(db, collection, id: id) }
        for item in answer.updated { try storeParent(db, collection, item) }
        try setFlag(db, MetaKey.nomore(collection), answer.nomore)
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
        try setFlag(db, MetaKey.nomore(child, parent: id), object["nomore"]?.boolValue ?? false)
    }

    /// A page of `loadMore` (`{"items", "nomore"}`): appended below what the replica holds.
    static func apply(_ db: Database, _ list: PagedList, parent: String?, _ answer: PageAnswer) throws {
        for item in answer.items {
            switch list {
            case .threads, .wall: try storeParent(db, list.collection, item)
            case .messages, .comments: try storeServer(db, list.collection, parent: parent ?? "", item)
            }
        }
        try setFlag(db, MetaKey.nomore(list.collection, parent: parent), answer.nomore)
    }

    /// `familysync` (protocol §5): the family and the caller's settings when present (null: unchanged), members and
    /// accounts as deltas; `sync: false` replaces all four.
    static func apply(_ db: Database, _ answer: FamilySyncAnswer) throws {
        if !answer.sync {
            for collection in [SyncCollection.family, .settings, .members, .accounts] { try clearServer(db, collection) }
        }
        if let family = answer.family {
            try clearServer(db, .family)
            try storeServer(db, .family, family)
        }
        if let settings = answer.settings {
            try clearServer(db, .settings)
            try storeServer(db, .settings, settings)
        }
        for (delta, collection) in [(answer.members, SyncCollection.members), (answer.accounts, .accounts)] {
            for id in delta.deleted { try removeServer(db, collection, id: id) }
            for item in delta.updated { try storeServer(db, collection, item) }
        }
    }
}
