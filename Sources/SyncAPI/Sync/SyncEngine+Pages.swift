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
        try Self.requireRead(session, spec)
        let query = PageQuery(
            collection: spec.name, anchorID: parameters.lastId, limit: parameters.nb, tags: parameters.types,
            children: embeddedChildren(session, spec).map { ChildrenQuery(collection: $0, limit: parameters.maxChildren) },
            byteBudget: pageBytes)
        var since = try await position(parameters.date, session, for: [spec.name] + (spec.childName.map { [$0] } ?? []))
        var rows = try await reads.pageSync(spaceID: session.spaceID, query: query, since: since?.version)
        if let position = since, !position.isHeld(by: rows.lineage) {
            // A date off the space's line (a history lost in a failover): read as a first page, as for no date.
            since = nil
            rows = try await reads.pageSync(spaceID: session.spaceID, query: query, since: nil)
        }
        // The client's list can be brought up to date only from a position this server can answer, and only when its
        // last item's place is known: the item exists (or existed) and its sort key has not moved since that position.
        // The store read `top` exactly when the answer is a fresh first page (`firstPage`).
        let answerable = PageSyncRows.answerable(
            since: since?.version, version: rows.version, horizon: rows.horizon, anchorID: parameters.lastId, anchor: rows.anchor)
        let list: PageList
        let crop: Bool
        if !answerable {
            list = PageList(rows.top, nb: parameters.nb, children: rows.children, maxChildren: parameters.maxChildren)
            crop = false
        } else if !rows.firstPage {
            // Every change, whatever its size (they fit the byte budget, else the answer is a first page).
            list = PageList(changes: rows.changed, children: rows.children, maxChildren: parameters.maxChildren)
            crop = false
        } else {
            // More changes than fit: a fresh top page, so that the client's list never has a hole.
            list = PageList(rows.top, nb: parameters.nb, children: rows.children, maxChildren: parameters.maxChildren)
            crop = true
        }
        let nomore: Bool
        if crop || !answerable {
            nomore = list.nomore
        } else if rows.anchor != nil {
            nomore = !rows.belowAnchor
        } else if let last = rows.changed.last {
            nomore = last.id == rows.bottom?.id
        } else {
            nomore = rows.bottom == nil
        }
        let date = try await token(rows.version, rows.lineage, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        var writer = JSONWriter(capacity: 256 + list.items.reduce(0) { $0 + ($1.body?.utf8.count ?? 0) * 2 })
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(answerable ? ",\"sync\":true,\"updated\":" : ",\"sync\":false,\"updated\":")
        Self.writeItems(list, children: rows.children, spec: spec, into: &writer)
        writer.raw(",\"deleted\":")
        writer.value(.array(answerable ? rows.deleted.map { .string($0) } : []))
        writer.raw(crop ? ",\"crop\":true" : ",\"crop\":false")
        writer.raw(nomore ? ",\"nomore\":true}" : ",\"nomore\":false}")
        return SyncAnswer(date: date, .whole(writer.bytes))
    }

    /// `GET /threads`, `/wall` (next items below `lastId`) and `GET /threads/{id}/messages`, `/wall/{id}/comments`:
    /// `{"items": […], "nomore": bool}`; 404 for a parent or a `lastId` that never existed. Children are read only by a
    /// caller that reads their parent collection too, checked before the parent is looked for (security review M3).
    public func page(_ session: Session, _ spec: CollectionSpec, parentID: String?, _ parameters: PageParameters) async throws -> [UInt8] {
        try Self.requireRead(session, spec, parent: parentSpec(of: spec))
        if let parentName = spec.parentName {
            guard let parentID, ItemID.isValid(parentID),
                try await reads.item(spaceID: session.spaceID, key: ItemKey(collection: parentName, id: parentID))?.live != nil
            else { throw SyncError.notFound("No such parent item.") }
        }
        let query = PageQuery(
            collection: spec.name, parentID: parentID ?? "", anchorID: parameters.lastId, limit: parameters.nb, tags: parameters.types,
            children: embeddedChildren(session, spec).map { ChildrenQuery(collection: $0, limit: parameters.maxChildren) },
            byteBudget: pageBytes)
        guard let rows = try await reads.page(spaceID: session.spaceID, query: query) else {
            throw SyncError.notFound("No item with this lastId.")
        }
        let list = PageList(rows.items, nb: parameters.nb, children: rows.children, maxChildren: parameters.maxChildren)
        var writer = JSONWriter(capacity: 256)
        writer.raw("{\"items\":")
        Self.writeItems(list, children: rows.children, spec: spec, into: &writer)
        writer.raw(list.nomore ? ",\"nomore\":true}" : ",\"nomore\":false}")
        return writer.bytes
    }

    /// The child collection whose items travel inside the parents of `spec` in answers to this caller: none when it may
    /// not read it (security review M3: a members-only child was embedded in the answers to readers). Every parent then
    /// carries an empty list and `nomore` true: of the children this caller may read, it has no more, as the children's
    /// own routes answer it 403. Nothing of them is read.
    func embeddedChildren(_ session: Session, _ spec: CollectionSpec) -> String? {
        guard let childName = spec.childName, let child = collections.named(childName) else { return spec.childName }
        return session.role >= child.access.read ? childName : nil
    }

    /// Writes items as a JSON array; a parent carries its newest children, those whose bodies were kept, and its own
    /// `nomore` (protocol §4): false when it has older ones or some were withheld (`PageBytes`). A parent whose
    /// children were not read (`embeddedChildren`) carries none, and `nomore` true.
    static func writeItems(_ list: PageList, children: [String: [StoredItem]], spec: CollectionSpec, into writer: inout JSONWriter) {
        writer.raw("[")
        for (index, item) in list.items.enumerated() {
            if index > 0 { writer.raw(",") }
            let body = item.body ?? "null"
            guard let childName = spec.childName else {
                writer.raw(body)
                continue
            }
            let newest = list.children(of: item.id, in: children)
            ItemBody.write(
                body,
                appending: { writer in
                    writer.raw(",")
                    writer.string(childName)
                    writer.raw(":[")
                    for (n, child) in newest.kept.enumerated() {
                        if n > 0 { writer.raw(",") }
                        writer.raw(child.body ?? "null")
                    }
                    writer.raw(newest.nomore ? "],\"nomore\":true" : "],\"nomore\":false")
                }, into: &writer)
        }
        writer.raw("]")
    }
}

/// The items a page answer carries and whether its list goes on, once bodies past the byte budget were withheld
/// (`PageBytes`): a list of the top of the sorted list ends before its first withheld item, and after its first item
/// whose children were cut, with `nomore` false (the client asks for the rest below its last item); a list of changes
/// is never cut (they fit the budget, else the answer is a first page), only its children may be.
struct PageList {
    let items: ArraySlice<StoredItem>
    /// False when the list was cut or the sorted list goes on.
    let nomore: Bool
    let maxChildren: Int

    /// The first `nb` of `rows` (read one more, to know whether more exist), cut at the byte budget.
    init(_ rows: [StoredItem], nb: Int, children: [String: [StoredItem]], maxChildren: Int) {
        self.maxChildren = maxChildren
        let page = rows.prefix(nb)
        var end = page.startIndex
        while end < page.endIndex, page[end].body != nil {
            end += 1
            if Self.cut(children[page[end - 1].id] ?? [], maxChildren: maxChildren) { break }
        }
        items = page[..<end]
        nomore = end == page.endIndex && rows.count <= nb
    }

    /// Every change (their bodies all kept); `nomore` is the caller's.
    init(changes: [StoredItem], children: [String: [StoredItem]], maxChildren: Int) {
        self.maxChildren = maxChildren
        items = changes[...]
        nomore = true
    }

    /// A parent's children to write (the newest `maxChildren` whose bodies were kept) and its own `nomore`.
    func children(of parentID: String, in children: [String: [StoredItem]]) -> (kept: ArraySlice<StoredItem>, nomore: Bool) {
        let newest = (children[parentID] ?? []).prefix(maxChildren)
        let kept = newest.prefix { $0.body != nil }
        return (kept, kept.count == newest.count && (children[parentID]?.count ?? 0) <= maxChildren)
    }

    /// Whether some of the first `maxChildren` children had their bodies withheld.
    static func cut(_ children: [StoredItem], maxChildren: Int) -> Bool {
        children.prefix(maxChildren).contains { $0.body == nil }
    }
}
