/// How a collection is synced (protocol §3–§5); the engine picks its delta logic from this alone.
public enum CollectionKind: Sendable, Equatable {
    /// The client holds every live item (`ctcsync`, `evtsync`, `plcsync`).
    case fullList
    /// The client holds the top of a sorted list (`msgsyncthread`, `wallsync`).
    case paginated
    /// Items under a parent item (messages of a thread), travelling inside the parent.
    case child(parent: String)
    /// One item per family or per account (`familysync`), whose id is the family's or the account's.
    case singleton(perAccount: Bool)
}

/// Where the sort key of a paginated or child item comes from. Sort keys never go down.
public enum SortKey: Sendable, Equatable {
    /// The item's creation time (wall posts, messages, comments): fixed while the item lives.
    case created
    /// The newest `created` of any child ever posted, else the item's creation time (threads: `lastMessageAt`).
    case lastChildCreated(field: String)
}

/// The one declaration of a collection: its name in paths and storage, kind, schema, ordering and children.
///
/// Adding a type of data is adding one of these (plus its golden files), not new SQL or new handlers.
public struct CollectionSpec: Sendable {
    /// Name used in paths (`/contacts/{id}`) and as the storage key.
    public let name: String
    public let kind: CollectionKind
    public let schema: ItemSchema
    /// The delta-sync endpoint that serves this collection (e.g. `ctcsync`), if it has its own.
    public let syncEndpoint: String?
    /// Sort key of paginated and child collections (order: key desc, then id desc).
    public let sortKey: SortKey?
    /// The child collection of a paginated parent; its items travel inside the parent under this name.
    public let childName: String?
    /// A field whose value is stored as the filter tag (`type` of wall posts), immutable while the item lives.
    public let filterField: String?
    /// True when items carry `author` (the creating account) and `created`, set by the server.
    public let authored: Bool
    /// True when a change of an item is also a change of the family item (members, protocol §2).
    public let changesFamily: Bool
    /// Who reads and writes it (protocol §15).
    public let access: CollectionAccess
    /// A list private to each account of a space (`"scope": "account"`, protocol §15): each account holds its own
    /// items, which no other account reads, counts or verifies; ids are per account.
    public let privateToAccount: Bool

    public init(
        name: String, kind: CollectionKind, schema: ItemSchema, syncEndpoint: String?, sortKey: SortKey? = nil,
        childName: String? = nil, filterField: String? = nil, authored: Bool = false, changesFamily: Bool = false,
        access: CollectionAccess = CollectionAccess(), privateToAccount: Bool = false
    ) {
        self.access = access
        self.privateToAccount = privateToAccount
        self.name = name
        self.kind = kind
        self.schema = schema
        self.syncEndpoint = syncEndpoint
        self.sortKey = sortKey
        self.childName = childName
        self.filterField = filterField
        self.authored = authored
        self.changesFamily = changesFamily
    }

    /// The storage key of the items `accountID` reads and writes: the name, or for a list private to each account the
    /// name and the account (`notes~<accountId>`), so that one account's items are a collection of their own: every
    /// read of them is the index's one condition, never a filter after reading. Names never hold `~`.
    public func storageName(for accountID: String) -> String { privateToAccount ? "\(name)~\(accountID)" : name }

    /// The collection a storage key belongs to (`notes~<accountId>` is `notes`).
    static func publicName(_ storageName: String) -> Substring { storageName.prefix { $0 != "~" } }

    /// The parent collection's name, for a child collection.
    public var parentName: String? {
        if case .child(let parent) = kind { return parent }
        return nil
    }
}

/// Who may read and write a collection's items in a space (protocol §15, the model's `access`).
public struct CollectionAccess: Sendable, Equatable {
    /// Who writes: a least role, or any member for new items and only the item's author (or an owner) for the rest.
    public enum Write: Sendable, Equatable {
        case role(SpaceRole)
        case author
    }

    /// The least role that reads.
    public let read: SpaceRole
    public let write: Write

    /// Readers read, members write.
    public init(read: SpaceRole = .reader, write: Write = .role(.member)) {
        self.read = read
        self.write = write
    }

    init(_ declared: DataModel.Access) {
        read = SpaceRole(stored: declared.read)
        write = declared.write == "author" ? .author : .role(SpaceRole(stored: declared.write))
    }
}
