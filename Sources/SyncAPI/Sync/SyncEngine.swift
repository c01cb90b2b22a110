import Synchronization

/// Computes every answer of the item and sync endpoints from the store: the one place that knows the
/// protocol's delta rules. Handlers call one engine method per endpoint; the engine never sees HTTP.
public struct SyncEngine: Sendable {
    public let store: any SyncStore
    let identity: DatabaseIDCache
    let now: @Sendable () -> Int64

    public init(store: any SyncStore, now: @escaping @Sendable () -> Int64 = WallClock.nowMs) {
        self.store = store
        self.identity = DatabaseIDCache()
        self.now = now
    }

    /// This database's id, put in every date of sync (read once, after migrations created it).
    public func databaseID() async throws -> String {
        if let id = identity.value.withLock({ $0 }) { return id }
        let id = try await store.databaseID()
        identity.value.withLock { $0 = id }
        return id
    }

    // MARK: Items

    /// `PUT /{collection}/{id}`: validates, then creates, replaces, resurrects or (identical content) keeps the item.
    public func put(
        _ session: Session, _ collection: CollectionSpec, id: String, body: JSONValue, preconditions: WritePreconditions
    ) async throws -> ItemAnswer {
        try Self.checkID(id)
        let content = try collection.schema.canonicalContent(of: body, pathID: id)
        let nowMs = now()
        let outcome = try await store.write(familyID: session.familyID, key: ItemKey(collection: collection.name, id: id), nowMs: nowMs) {
            existing in
            let live = existing.flatMap { $0.deleted ? nil : $0 }
            try preconditions.check(live: live)
            if let body = live?.body, ItemBody.content(of: body) == .object(content) { return .unchanged }
            return .put(body: ItemBody.make(id: id, content: content, serverFields: [], modifiedMs: nowMs))
        }
        guard let item = outcome.item else { throw SyncError.notFound() }
        return ItemAnswer(item: item)
    }

    /// `DELETE /{collection}/{id}`: idempotent; a missing item is not an error (unless `If-Match` asks for it).
    public func delete(_ session: Session, _ collection: CollectionSpec, id: String, preconditions: WritePreconditions) async throws {
        try Self.checkID(id)
        _ = try await store.write(familyID: session.familyID, key: ItemKey(collection: collection.name, id: id), nowMs: now()) {
            existing in
            let live = existing.flatMap { $0.deleted ? nil : $0 }
            try preconditions.check(live: live)
            return live == nil ? .unchanged : .delete
        }
    }

    /// `GET /{collection}/{id}`: the live item, or 404.
    public func get(_ session: Session, _ collection: CollectionSpec, id: String, ifNoneMatch: String?) async throws -> ItemAnswer {
        try Self.checkID(id)
        guard let item = try await store.item(familyID: session.familyID, key: ItemKey(collection: collection.name, id: id)),
            !item.deleted
        else { throw SyncError.notFound("No \(collection.name) item with this id.") }
        let answer = ItemAnswer(item: item)
        if let ifNoneMatch, EntityTags.list(ifNoneMatch).contains(where: { $0 == "*" || $0 == answer.etag }) {
            return ItemAnswer(item: item, notModified: true)
        }
        return answer
    }

    static func checkID(_ id: String) throws {
        guard ItemID.isValid(id) else {
            throw SyncError.invalidID("An id is 1 to 64 characters of A-Z a-z 0-9 . _ : - (not \".\" or \"..\").")
        }
    }

    // MARK: Full-list sync

    /// `GET /ctcsync`, `/evtsync`, `/plcsync` (protocol §3).
    public func fullListSync(
        _ session: Session, _ collection: CollectionSpec, date: String?, ifNoneMatch: String?
    ) async throws
        -> SyncAnswer
    {
        let databaseID = try await databaseID()
        var since: Int64?
        if case .position(let version) = try SyncToken.parse(date, databaseID: databaseID, familyID: session.familyID) {
            since = version
        }
        var delta = try await store.delta(familyID: session.familyID, collection: collection.name, since: since)
        if let position = since, position > delta.version || position < delta.horizon {
            // A position never reached, or older than purged tombstones: only a full answer is exact.
            since = nil
            delta = try await store.delta(familyID: session.familyID, collection: collection.name, since: nil)
        }
        let date = SyncToken(databaseID: databaseID, familyID: session.familyID, version: delta.version).string
        if let ifNoneMatch, EntityTags.list(ifNoneMatch).contains("\"\(date)\"") {
            return SyncAnswer(date: date, body: [], notModified: true)
        }
        var writer = JSONWriter(capacity: 64 + delta.rows.reduce(0) { $0 + ($1.body?.utf8.count ?? $1.id.utf8.count + 3) })
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(since == nil ? ",\"sync\":false,\"updated\":[" : ",\"sync\":true,\"updated\":[")
        var first = true
        for row in delta.rows where !row.deleted {
            if !first { writer.raw(",") }
            first = false
            writer.raw(row.body ?? "null")
        }
        writer.raw("],\"deleted\":[")
        first = true
        for row in delta.rows where row.deleted {
            if !first { writer.raw(",") }
            first = false
            writer.string(row.id)
        }
        writer.raw("]}")
        return SyncAnswer(date: date, body: writer.bytes, notModified: false)
    }
}

/// Remembers the database id once read.
final class DatabaseIDCache: Sendable {
    let value = Mutex<String?>(nil)
}

/// The canonical JSON of a stored item: `id`, the schema's fields in order, server fields, `modified` last.
public enum ItemBody {
    public static func make(
        id: String, content: [(key: String, value: JSONValue)], serverFields: [(key: String, value: JSONValue)], modifiedMs: Int64
    ) -> String {
        var members: [(key: String, value: JSONValue)] = [("id", .string(id))]
        members += content
        members += serverFields
        members.append(("modified", .string(Timestamp.format(epochMilliseconds: modifiedMs))))
        return JSONWriter.encode(.object(members))
    }

    /// The client-controlled part of a stored body (no `id`, no server-set fields), to compare with a new PUT.
    public static func content(of body: String) -> JSONValue? {
        guard case .object(let members)? = try? JSONParser.parse(body) else { return nil }
        return .object(members.filter { $0.key != "id" && !ItemSchema.serverSetFields.contains($0.key) })
    }
}
