/// The answer of a list's sync endpoint (protocol §3, as `ctcsync`): what changed since the date sent.
public struct SyncAnswer: Codable, Sendable, Equatable {
    /// The new date of sync, opaque: stored and sent back unmodified.
    public var date: String
    /// False: `updated` is the whole list and replaces the replica's copy.
    public var sync: Bool
    /// Items created or changed since the date, oldest change first.
    public var updated: [JSONObject]
    /// Ids deleted since the date.
    public var deleted: [String]

    public init(date: String, sync: Bool, updated: [JSONObject], deleted: [String]) {
        self.date = date
        self.sync = sync
        self.updated = updated
        self.deleted = deleted
    }
}

/// The answer of a paginated list's sync endpoint (protocol §4, as `msgsyncthread`): the top of a sorted list, with
/// each parent carrying its newest children.
public struct PagedSyncAnswer: Codable, Sendable, Equatable {
    public var date: String
    /// False: `updated` is the first page and replaces the replica's list.
    public var sync: Bool
    public var updated: [JSONObject]
    public var deleted: [String]
    /// True: too much changed; the replica keeps only `updated` (a fresh top page).
    public var crop: Bool
    /// True: the server has no item below what the replica now holds.
    public var nomore: Bool

    public init(date: String, sync: Bool, updated: [JSONObject], deleted: [String], crop: Bool, nomore: Bool) {
        self.date = date
        self.sync = sync
        self.updated = updated
        self.deleted = deleted
        self.crop = crop
        self.nomore = nomore
    }
}

/// A page of `loadMore` (`GET /<paginated>`, `GET /<paginated>/{id}/<children>`, protocol §4):
/// the items strictly below the `lastId` sent.
public struct PageAnswer: Codable, Sendable, Equatable {
    public var items: [JSONObject]
    public var nomore: Bool
}

/// Sync answers read from an answer already parsed (a group's body), member by member: no second parse of its text.
extension SyncAnswer {
    init(parsed body: JSONValue) throws {
        let members = try ParsedAnswer(body)
        self.init(
            date: try members.string("date"), sync: try members.bool("sync"), updated: try members.objects("updated"),
            deleted: try members.ids("deleted"))
    }
}

extension PagedSyncAnswer {
    init(parsed body: JSONValue) throws {
        let members = try ParsedAnswer(body)
        self.init(
            date: try members.string("date"), sync: try members.bool("sync"), updated: try members.objects("updated"),
            deleted: try members.ids("deleted"), crop: try members.bool("crop"), nomore: try members.bool("nomore"))
    }
}

/// The members of a parsed answer, each of the type the protocol gives it, or a clear error.
private struct ParsedAnswer {
    let object: JSONObject

    init(_ body: JSONValue) throws {
        guard let object = body.objectValue else { throw SyncClientError.invalidAnswer("an answer that is not an object") }
        self.object = object
    }

    func string(_ key: String) throws -> String {
        guard let value = object[key]?.stringValue else { throw missing(key, "a string") }
        return value
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = object[key]?.boolValue else { throw missing(key, "a boolean") }
        return value
    }

    func objects(_ key: String) throws -> [JSONObject] {
        guard let array = object[key]?.arrayValue else { throw missing(key, "an array") }
        return try array.map {
            guard let item = $0.objectValue else { throw missing(key, "an array of objects") }
            return item
        }
    }

    func ids(_ key: String) throws -> [String] {
        guard let array = object[key]?.arrayValue else { throw missing(key, "an array") }
        return try array.map {
            guard let id = $0.stringValue else { throw missing(key, "an array of strings") }
            return id
        }
    }

    private func missing(_ key: String, _ type: String) -> SyncClientError {
        .invalidAnswer("\"\(key)\" is not \(type)")
    }
}
