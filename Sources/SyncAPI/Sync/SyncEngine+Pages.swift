/// The parameters of a paginated sync or page (protocol §4), already validated by the caller.
public struct PageParameters: Sendable {
    public var date: String?
    /// The client's last item (sync) or the place to continue below (pages).
    public var lastId: String?
    public var nb: Int
    /// `maxmessages` / `maxcomments`.
    public var maxChildren: Int
    /// Wall post types to keep (nil: all).
    public var types: [String]?

    public init(date: String? = nil, lastId: String? = nil, nb: Int = 20, maxChildren: Int = 10, types: [String]? = nil) {
        self.date = date
        self.lastId = lastId
        self.nb = nb
        self.maxChildren = maxChildren
        self.types = types
    }
}

extension SyncEngine {
    /// `GET /msgsyncthread`, `/wallsync` (protocol §4): the changes of the part of the sorted list the client holds,
    /// or a fresh top page when they do not fit (`crop`), with `nomore` telling whether the list goes on.
    public func pagedSync(
        _ session: Session, _ spec: CollectionSpec, _ parameters: PageParameters, ifNoneMatch: String?
    ) async throws
        -> SyncAnswer
    {
        let since = try await position(parameters.date, session, for: [spec.name] + (spec.childName.map { [$0] } ?? []))
        let query = PageQuery(
            collection: spec.name, anchorID: parameters.lastId, limit: parameters.nb, tags: parameters.types,
            children: spec.childName.map { ChildrenQuery(collection: $0, limit: parameters.maxChildren) })
        let rows = try await store.pageSync(familyID: session.familyID, query: query, since: since)
        // The client's list can be brought up to date only from a position this server can answer, and only when its
        // last item's place is known: the item exists (or existed) and its sort key has not moved since that position.
        // The store read `top` exactly when `needsFirstPage` says the branches below answer from it.
        let answerable = PageSyncRows.answerable(
            since: since, version: rows.version, horizon: rows.horizon, anchorID: parameters.lastId, anchor: rows.anchor)
        let nb = parameters.nb
        let updated: ArraySlice<StoredItem>
        let crop: Bool
        let nomore: Bool
        if !answerable {
            updated = rows.top.prefix(nb)
            crop = false
            nomore = rows.top.count <= nb
        } else if rows.changed.count <= nb {
            updated = rows.changed[...]
            crop = false
            if rows.anchor != nil {
                nomore = !rows.belowAnchor
            } else if let last = rows.changed.last {
                nomore = last.id == rows.bottom?.id
            } else {
                nomore = rows.bottom == nil
            }
        } else {
            // More changes than fit: a fresh top page, so that the client's list never has a hole.
            updated = rows.top.prefix(nb)
            crop = true
            nomore = rows.top.count <= nb
        }
        let date = try await token(rows.version, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, body: [], notModified: true) }
        var writer = JSONWriter(capacity: 256 + updated.reduce(0) { $0 + ($1.body?.utf8.count ?? 0) * 2 })
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(answerable ? ",\"sync\":true,\"updated\":" : ",\"sync\":false,\"updated\":")
        Self.writeItems(updated, children: rows.children, spec: spec, maxChildren: parameters.maxChildren, into: &writer)
        writer.raw(",\"deleted\":")
        writer.value(.array(answerable ? rows.deleted.map { .string($0) } : []))
        writer.raw(crop ? ",\"crop\":true" : ",\"crop\":false")
        writer.raw(nomore ? ",\"nomore\":true}" : ",\"nomore\":false}")
        return SyncAnswer(date: date, body: writer.bytes, notModified: false)
    }

    /// `GET /threads`, `/wall` (next items below `lastId`) and `GET /threads/{id}/messages`, `/wall/{id}/comments`:
    /// `{"items": […], "nomore": bool}`; 404 for a parent or a `lastId` that never existed.
    public func page(_ session: Session, _ spec: CollectionSpec, parentID: String?, _ parameters: PageParameters) async throws -> [UInt8] {
        if let parentName = spec.parentName {
            guard let parentID, ItemID.isValid(parentID),
                try await store.item(familyID: session.familyID, key: ItemKey(collection: parentName, id: parentID))?.live != nil
            else { throw SyncError.notFound("No such parent item.") }
        }
        let query = PageQuery(
            collection: spec.name, parentID: parentID ?? "", anchorID: parameters.lastId, limit: parameters.nb, tags: parameters.types,
            children: spec.childName.map { ChildrenQuery(collection: $0, limit: parameters.maxChildren) })
        guard let rows = try await store.page(familyID: session.familyID, query: query) else {
            throw SyncError.notFound("No item with this lastId.")
        }
        var writer = JSONWriter(capacity: 256)
        writer.raw("{\"items\":")
        Self.writeItems(
            rows.items.prefix(parameters.nb), children: rows.children, spec: spec, maxChildren: parameters.maxChildren, into: &writer)
        writer.raw(rows.items.count <= parameters.nb ? ",\"nomore\":true}" : ",\"nomore\":false}")
        return writer.bytes
    }

    /// Writes items as a JSON array; a parent carries its newest children and its own `nomore` (protocol §4).
    static func writeItems(
        _ items: ArraySlice<StoredItem>, children: [String: [StoredItem]], spec: CollectionSpec, maxChildren: Int,
        into writer: inout JSONWriter
    ) {
        writer.raw("[")
        for (index, item) in items.enumerated() {
            if index > 0 { writer.raw(",") }
            guard let body = item.body else { continue }
            guard let childName = spec.childName else {
                writer.raw(body)
                continue
            }
            let newest = children[item.id] ?? []
            ItemBody.write(
                body,
                appending: { writer in
                    writer.raw(",")
                    writer.string(childName)
                    writer.raw(":[")
                    for (n, child) in newest.prefix(maxChildren).enumerated() {
                        if n > 0 { writer.raw(",") }
                        writer.raw(child.body ?? "null")
                    }
                    writer.raw(newest.count <= maxChildren ? "],\"nomore\":true" : "],\"nomore\":false")
                }, into: &writer)
        }
        writer.raw("]")
    }
}
