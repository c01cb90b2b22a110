/// Where a write or read lands: an item of a collection, under its parent for a child collection.
public struct ItemAddress: Sendable {
    public let collection: CollectionSpec
    /// The parent's id for a child collection (messages of a thread), nil otherwise.
    public let parentID: String?
    public let id: String

    public init(_ collection: CollectionSpec, parentID: String? = nil, id: String) {
        self.collection = collection
        self.parentID = parentID
        self.id = id
    }

    /// For a list private to each account: the account whose items the address names (set by the engine from the
    /// caller's session).
    var owner: String?

    var key: ItemKey { ItemKey(collection: owner.map(collection.storageName) ?? collection.name, parentID: parentID ?? "", id: id) }

    /// The address in the caller's own items when the collection is private to each account.
    func owned(by session: Session) -> ItemAddress {
        guard collection.privateToAccount else { return self }
        var address = self
        address.owner = session.accountID
        return address
    }

    /// The parent's row key, for a child collection.
    var parentKey: ItemKey? {
        guard let parentName = collection.parentName, let parentID else { return nil }
        return ItemKey(collection: parentName, id: parentID)
    }

    /// The row a write also changes: the parent of a child, the family singleton's item for a collection that changes
    /// the family.
    func touched(_ session: Session, family: CollectionSpec?) -> ItemKey? {
        if let parentKey { return parentKey }
        guard collection.changesFamily, let family else { return nil }
        return ItemKey(collection: family.name, id: session.spaceID)
    }

    func validate() throws {
        try SyncEngine.checkID(id)
        if collection.parentName != nil {
            guard let parentID, ItemID.isValid(parentID) else { throw SyncError.notFound("No such parent item.") }
        }
    }
}

extension SyncEngine {
    /// `PUT`: validates, then creates, replaces, resurrects or (identical content) keeps the item. A child's write
    /// also changes its parent (protocol §2).
    public func put(
        _ session: Session, _ address: ItemAddress, body: JSONValue, preconditions: WritePreconditions
    ) async throws
        -> ItemAnswer
    {
        try Self.requireWrite(session, address, parent: parentSpec(of: address.collection))
        let address = address.owned(by: session)
        try address.validate()
        let content = try address.collection.schema.canonicalContent(of: body, pathID: address.id)
        return try await store(session, address, preconditions: preconditions) { _ in content }
    }

    /// `PATCH` (protocol §2, JSON Merge Patch, RFC 7396): the patch applied to the stored item's content under the
    /// family's lock, the result validated as a whole like a PUT body. Never creates: 404 for a missing or deleted
    /// item, except a singleton, which always exists (with its defaults). Fields the patch does not name keep their
    /// stored value: an app version that does not know a field never erases it, and neither does an instance whose
    /// model does not declare it yet (a rolling deploy of an added field keeps the stored members it does not know).
    public func patch(
        _ session: Session, _ address: ItemAddress, patch: JSONValue, preconditions: WritePreconditions
    ) async throws
        -> ItemAnswer
    {
        try Self.requireWrite(session, address, parent: parentSpec(of: address.collection))
        let address = address.owned(by: session)
        try address.validate()
        // Checked and keyed before the write: the work under the family's lock is linear in the declared fields,
        // whatever the patch's size.
        let changes = try Self.mergePatchChanges(patch, address.collection.schema, pathID: address.id)
        let spec = address.collection
        let singleton = if case .singleton = spec.kind { true } else { false }
        return try await store(session, address, preconditions: preconditions) { live in
            guard live != nil || singleton else { throw SyncError.notFound("No \(spec.name) item with this id.") }
            var merged: [String: JSONValue] = [:]
            if case .object(let stored) = ItemBody.content(of: ItemBody.members(of: live?.body), spec.schema) {
                for member in stored { merged[member.key] = member.value }
            }
            for (key, value) in changes { merged[key] = value == .null ? nil : value }
            return try spec.schema.canonicalContent(of: .object(merged.map { ($0.key, $0.value) }), pathID: address.id)
        } keeping: { stored in
            ItemBody.undeclared(stored, spec.schema)
        }
    }

    /// A merge patch's members by name: `id` must be the path's, server-set names are ignored, any other name the
    /// schema does not declare is 400 `unknown_field`. A name given twice counts once (the last).
    static func mergePatchChanges(_ patch: JSONValue, _ schema: ItemSchema, pathID: String) throws -> [String: JSONValue] {
        guard case .object(let members) = patch else { throw SyncError.invalidJSON("A merge patch must be a JSON object.") }
        let declared = Set(schema.fields.map(\.name))
        var changes: [String: JSONValue] = [:]
        for member in members {
            if member.key == "id" {
                guard member.value == .string(pathID) else { throw SyncError.invalidID("The body's id differs from the id in the path.") }
                continue
            }
            if declared.contains(member.key) {
                changes[member.key] = member.value
            } else if !schema.serverSetFields.contains(member.key) {
                throw SyncError.unknownField(member.key)
            }
        }
        return changes
    }

    /// Creates, replaces or (identical content) keeps the item with the content `decide` gives from its live row,
    /// under the family's lock. A child's write also changes its parent.
    private func store(
        _ session: Session, _ address: ItemAddress, preconditions: WritePreconditions,
        content decide: @escaping @Sendable (StoredItem?) throws -> [(key: String, value: JSONValue)],
        keeping kept: @escaping @Sendable ([(key: String, value: JSONValue)]) -> [(key: String, value: JSONValue)] = { _ in [] }
    ) async throws -> ItemAnswer {
        let spec = address.collection
        let nowMs = now()
        let accountID = session.accountID
        let outcome = try await write(session, address, nowMs: nowMs) { context in
            let parent = try Self.liveParent(address, context)
            let live = context.existing?.live
            try preconditions.check(live: live)
            let content = try decide(live)
            let stored = ItemBody.members(of: live?.body)
            if live != nil, ItemBody.content(of: stored, spec.schema) == .object(content) { return .unchanged }
            let value = { (key: String) in stored.first { $0.key == key }?.value }
            if live != nil, let field = spec.filterField, value(field) != content.first(where: { $0.key == field })?.value {
                throw SyncError.typeImmutable(collection: spec.name, field: field)
            }
            // Server fields: kept from the live item, set anew for a new or resurrected one.
            let sortMs = live?.sortMs ?? nowMs
            var server: [(key: String, value: JSONValue)] = []
            if spec.authored {
                server.append(("author", value("author") ?? .string(accountID)))
                // Kept from the live item: a list stores no sort position, so `sortMs` would be the update's time.
                server.append(("created", live.flatMap { _ in value("created") } ?? .string(Timestamp.format(epochMilliseconds: sortMs))))
            }
            if case .lastChildCreated(let field) = spec.sortKey {
                server.append((field, .string(Timestamp.format(epochMilliseconds: sortMs))))
            }
            var rows = [
                RowWrite(
                    key: address.key,
                    body: ItemBody.make(id: address.id, content: content + kept(stored), serverFields: server, modifiedMs: nowMs),
                    sortMs: spec.sortKey == nil ? nil : sortMs, sortMoved: live == nil,
                    tag: spec.filterField.flatMap { field in content.first { $0.key == field }?.value.stringValue })
            ]
            if let parent {
                rows.append(touch(parent, address, newChildCreated: live == nil ? sortMs : nil, nowMs: nowMs))
            }
            return .write(rows)
        }
        guard let item = outcome.item else { throw SyncError.notFound() }
        return ItemAnswer(item: item)
    }

    /// `DELETE`: idempotent; a missing item is not an error (unless `If-Match` asks for it). Deleting a parent
    /// deletes its children; deleting a child changes its parent. A parent whose children are written by their authors
    /// only is deleted by a caller below owner only while it holds none of another account (security review L3).
    public func delete(_ session: Session, _ address: ItemAddress, preconditions: WritePreconditions) async throws {
        try Self.requireWrite(session, address, parent: parentSpec(of: address.collection))
        let address = address.owned(by: session)
        try address.validate()
        var attempts = 0
        while true {
            let checked = try await checkCascade(session, address)
            do {
                return try await delete(session, address, preconditions: preconditions, checked: checked)
            } catch let error as SyncError where error == Self.childrenMoved {
                // A child of the parent was written between the read of its children and the lock: read them again.
                attempts += 1
                if attempts == Self.cascadeAttempts { throw error }
            }
        }
    }

    /// The delete itself, under the family's lock; `checked`, the parent's row as its children were read, must still be
    /// the row the lock finds.
    private func delete(
        _ session: Session, _ address: ItemAddress, preconditions: WritePreconditions, checked: CascadeCheck?
    ) async throws {
        let nowMs = now()
        _ = try await write(session, address, nowMs: nowMs) { context in
            let parent = try Self.liveParent(address, context)
            let live = context.existing?.live
            try preconditions.check(live: live)
            guard let live else { return .unchanged }
            // Every write of a child rewrites its parent's row (`touch`): an unchanged version means unchanged children.
            if let checked, checked.parentVersion != live.version { throw Self.childrenMoved }
            var rows = [
                RowWrite(
                    key: address.key, body: nil, sortMs: live.sortMs, sortMoved: false, tag: live.tag,
                    deleteChildren: address.collection.childName)
            ]
            if let parent { rows.append(touch(parent, address, newChildCreated: nil, nowMs: nowMs)) }
            return .write(rows)
        }
    }

    /// What a parent's delete read of its children before taking the family's lock (`checkCascade`).
    struct CascadeCheck: Sendable {
        /// The version of the parent's row (live or tombstone) read before its children; nil when it had none.
        let parentVersion: Int64?
    }

    /// How many times a delete reads a parent's children again when one of them changed before its lock.
    static let cascadeAttempts = 3
    /// Children read per page by `requireOwnChildren`.
    static let cascadePage = 500
    /// Thrown under the lock when the parent's row moved after its children were read; retried by `delete`, answered
    /// (503, retry) only when the children kept changing.
    static let childrenMoved = SyncError(
        .unavailable, detail: "The item's children changed while it was being deleted; send the delete again.", retryAfter: 1)

    /// Security review L3: a caller below owner deleting a parent whose child collection is `write: author` would delete
    /// other authors' children, which it may not delete one by one. 403 `forbidden` when the parent holds a live child
    /// of another account. The parent's row is read first, then its children, from the primary; the answer holds for
    /// the delete only while that row's version is the one the family's lock finds (every child write rewrites its
    /// parent), which the delete checks. Nil when there is nothing to check (an owner, no such children).
    func checkCascade(_ session: Session, _ address: ItemAddress) async throws -> CascadeCheck? {
        guard session.role < .owner, let childName = address.collection.childName, let child = collections.named(childName),
            child.access.write == .author
        else { return nil }
        let row = try await store.item(spaceID: session.spaceID, key: address.key)
        if let live = row?.live { try await requireOwnChildren(session, child, of: address.collection, parentID: live.id) }
        return CascadeCheck(parentVersion: row?.version)
    }

    /// 403 `forbidden` at the first live child of `parentID` that another account wrote, read page by page (each page
    /// within the byte budget of a page answer).
    private func requireOwnChildren(_ session: Session, _ child: CollectionSpec, of parent: CollectionSpec, parentID: String) async throws {
        var anchor: String?
        while true {
            let query = PageQuery(
                collection: child.name, parentID: parentID, anchorID: anchor, limit: Self.cascadePage, tags: nil, children: nil,
                byteBudget: pageBytes)
            // Nil: the place read last is gone (purged meanwhile); so did the parent's row move, and the delete reads again.
            guard let rows = try await store.page(spaceID: session.spaceID, query: query) else { throw Self.childrenMoved }
            var last: String?
            var more = rows.items.count > Self.cascadePage
            for row in rows.items.prefix(Self.cascadePage) {
                // A body withheld past the byte budget: the next page starts after the last one read.
                guard let body = row.body else {
                    more = true
                    break
                }
                guard ItemBody.members(of: body).first(where: { $0.key == "author" })?.value == .string(session.accountID) else {
                    throw SyncError.forbidden(
                        "Only an owner deletes an item of \(parent.name) that holds \(child.name) of other authors.")
                }
                last = row.id
            }
            guard more else { return }
            // The first body of a page is always kept, so a page that goes on has read at least one child.
            guard let last else { throw Self.childrenMoved }
            anchor = last
        }
    }

    /// 403 `forbidden` for a write below the collection's role (protocol §15: members write, readers only read), or by a
    /// caller that may not read it (`requireRead`, `parent` included); an account-scoped singleton is the account's own,
    /// which any role writes.
    static func requireWrite(_ session: Session, _ address: ItemAddress, parent: CollectionSpec?) throws {
        if case .singleton(perAccount: true) = address.collection.kind { return }
        switch address.collection.access.write {
        case .role(let role): try session.require(role, to: "write \(address.collection.name)")
        case .author: try session.require(.member, to: "write \(address.collection.name)")
        }
        try requireRead(session, address.collection, parent: parent)
    }

    /// 403 `forbidden` for a read below the collection's role (protocol §15, the model's `access.read`). With `parent`,
    /// the collection is a child, read under its parent: the parent's role is required too, the stricter of the two
    /// (security review M3: a members-only parent's children were read by readers through their own routes).
    static func requireRead(_ session: Session, _ collection: CollectionSpec, parent: CollectionSpec? = nil) throws {
        try session.require(collection.access.read, to: "read \(collection.name)")
        if let parent { try session.require(parent.access.read, to: "read \(parent.name)") }
    }

    /// The parent collection of a child collection, nil for the others.
    func parentSpec(of collection: CollectionSpec) -> CollectionSpec? {
        collection.parentName.flatMap(collections.named)
    }

    /// For a collection written by authors only: 403 `forbidden` when the live item was created by another account and
    /// the caller is not an owner (checked under the family's lock, on the row the write replaces).
    static func requireAuthor(_ session: Session, _ collection: CollectionSpec, _ live: StoredItem?) throws {
        guard collection.access.write == .author, session.role < .owner, let live else { return }
        let author = ItemBody.members(of: live.body).first { $0.key == "author" }?.value
        guard author == .string(session.accountID) else {
            throw SyncError.forbidden("Only its author or an owner changes an item of \(collection.name).")
        }
    }

    /// Runs a write of `address` (and the row it touches) whose `plan` is then held to the family's quotas.
    private func write(
        _ session: Session, _ address: ItemAddress, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        let (key, quotas) = (address.key, quotas)
        // Committed or maybe: the space's heard counter goes before the answer, so the writer's next delta on this
        // instance reads its write rather than waiting for the notice.
        defer { heard?.moved(space: session.spaceID) }
        return try await store.write(
            spaceID: session.spaceID, key: key, parent: address.touched(session, family: collections.familySingleton), nowMs: nowMs
        ) {
            context in
            try Self.requireAuthor(session, address.collection, context.existing?.live)
            let decided = try plan(context)
            if case .write(let rows) = decided {
                try quotas.check(rows, replacing: { $0 == key ? context.existing : context.parent }, usage: context.usage)
            }
            return decided
        }
    }

    /// `GET`: the live item, or 404 (also under a missing or deleted parent).
    public func get(_ session: Session, _ address: ItemAddress, ifNoneMatch: String?) async throws -> ItemAnswer {
        // A child under its parent: the parent's role too, checked before the parent is looked for (no existence oracle).
        try Self.requireRead(session, address.collection, parent: parentSpec(of: address.collection))
        let address = address.owned(by: session)
        try address.validate()
        if let parentKey = address.parentKey {
            guard try await reads.item(spaceID: session.spaceID, key: parentKey)?.live != nil else {
                throw SyncError.notFound("No such parent item.")
            }
        }
        guard let item = try await reads.item(spaceID: session.spaceID, key: address.key)?.live else {
            throw SyncError.notFound("No \(address.collection.name) item with this id.")
        }
        let answer = ItemAnswer(item: item)
        if let ifNoneMatch, EntityTags.list(ifNoneMatch).contains(where: { $0 == "*" || $0 == answer.etag }) {
            return ItemAnswer(item: item, notModified: true)
        }
        return answer
    }

    /// The live item a write also changes: a child's parent (404 when it is missing or deleted), or the family item
    /// for a collection that changes the family. Nil for the others.
    static func liveParent(_ address: ItemAddress, _ context: WriteContext) throws -> StoredItem? {
        if address.parentKey != nil {
            guard let parent = context.parent?.live else { throw SyncError.notFound("No such parent item.") }
            return parent
        }
        return context.parent?.live
    }

    /// The parent rewritten after a change of one of its children: new `modified` (so it syncs again), and for a
    /// parent sorted by its children's activity, a sort key moved up to a new child's creation time.
    func touch(_ parent: StoredItem, _ child: ItemAddress, newChildCreated: Int64?, nowMs: Int64) -> RowWrite {
        let familyName = collections.familySingleton?.name ?? ""
        let parentSpec = child.collection.parentName.flatMap(collections.named) ?? collections.familySingleton
        var sortMs = parent.sortMs
        var sortField: String?
        if case .lastChildCreated(let field)? = parentSpec?.sortKey, let created = newChildCreated {
            sortMs = max(parent.sortMs ?? created, created)
            sortField = field
        }
        let members = ItemBody.members(of: parent.body).map { member -> (key: String, value: JSONValue) in
            if member.key == "modified" { return (member.key, .string(Timestamp.format(epochMilliseconds: nowMs))) }
            if member.key == sortField, let sortMs { return (member.key, .string(Timestamp.format(epochMilliseconds: sortMs))) }
            return member
        }
        return RowWrite(
            key: child.parentKey ?? ItemKey(collection: familyName, id: parent.id), body: JSONWriter.encode(.object(members)),
            sortMs: sortMs, sortMoved: sortMs != parent.sortMs,
            tag: parent.tag)
    }
}
