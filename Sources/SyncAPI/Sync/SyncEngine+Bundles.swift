import NIOCore

/// What a bundle endpoint answers (protocol §5): its family-scoped singletons, its lists (with the accounts' public
/// profiles when it has a family-scoped singleton), its account-scoped singletons, and the collections its delta reads.
struct BundleLayout {
    let familyScoped: [CollectionSpec]
    /// (answer key, collection read) of each list.
    let listKeys: [(String, String)]
    let accountScoped: [CollectionSpec]
    /// The collections of the bundle's one delta, in answer order.
    let names: [String]

    /// `accountID`: the caller, whose own items a list private to each account reads.
    init?(_ endpoint: String, _ registry: CollectionRegistry, accountID: String) {
        guard let bundle = registry.bundles.first(where: { $0.endpoint == endpoint })?.collections else { return nil }
        familyScoped = bundle.filter { $0.kind == .singleton(perAccount: false) }
        accountScoped = bundle.filter { $0.kind == .singleton(perAccount: true) }
        var listKeys = bundle.filter { $0.kind == .fullList }.map { ($0.name, $0.storageName(for: accountID)) }
        if !familyScoped.isEmpty { listKeys.append(("accounts", Collections.accountsKey)) }
        self.listKeys = listKeys
        names = familyScoped.map(\.name) + listKeys.map(\.1) + accountScoped.map(\.name)
    }
}

extension SyncEngine {
    /// An endpoint that answers singletons and lists together (protocol §5, §12: the family app's `familysync`):
    /// the family-scoped singleton, the lists, the accounts' public profiles (with a family-scoped singleton), then
    /// the account-scoped singleton (the caller's own), changed since the date, from one snapshot. A singleton is
    /// `null` when unchanged since the date.
    ///
    /// The changes, or every live row without an answerable date, are built whole while they fit a delta's budget
    /// (`Delta.byteBudget`); past it (a large list, a date from long ago or forged) every live row is streamed from a
    /// snapshot instead, so no bundle holds its lists whole in memory.
    public func bundleSync(_ session: Session, endpoint: String, date: String?, ifNoneMatch: String?) async throws -> SyncAnswer {
        guard let layout = BundleLayout(endpoint, collections, accountID: session.accountID) else { throw SyncError.notFound() }
        for name in layout.names {
            if let spec = collections.named(String(CollectionSpec.publicName(name))) { try Self.requireRead(session, spec) }
        }
        if let answer = heardAnswer(endpoint: endpoint, date: date, ifNoneMatch: ifNoneMatch) { return answer }
        var since = try await position(date, session, for: layout.names)
        let cacheName = Self.bundleCacheName(endpoint, session)
        if let position = since {
            if let unchanged = unchangedDelta(session, position) {
                return try await bundleAnswer(session, layout, unchanged, since: position, ifNoneMatch: ifNoneMatch)
            }
            if let kept = try await keptRange(session, name: cacheName, position, ifNoneMatch: ifNoneMatch) { return kept }
        }
        var delta = try await heardDelta(session) {
            try await reads.delta(spaceID: session.spaceID, collections: layout.names, since: since?.version)
        }
        if let position = since, !delta.answers(position), !delta.overflowed {
            // A date that cannot be answered exactly (never reached, older than purged tombstones, or off the space's
            // line): every live row.
            delta = try await reads.delta(spaceID: session.spaceID, collections: layout.names, since: nil)
            since = nil
        }
        if delta.overflowed { return try await streamedBundle(session, layout, ifNoneMatch: ifNoneMatch) }
        let answer = try await bundleAnswer(session, layout, delta, since: since, ifNoneMatch: ifNoneMatch)
        if let since { keepRange(answer, name: cacheName, since) }
        return answer
    }

    /// A bundle's answer from `delta`: a delta's when `since` is its date, every live row when nil.
    func bundleAnswer(
        _ session: Session, _ layout: BundleLayout, _ delta: Delta, since: DatePosition?, ifNoneMatch: String?
    ) async throws
        -> SyncAnswer
    {
        let date = try await token(delta.version, delta.lineage, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        var writer = JSONWriter(capacity: 1024)
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(since == nil ? ",\"sync\":false" : ",\"sync\":true")
        for singleton in layout.familyScoped {
            writer.raw(",\"\(singleton.name)\":")
            writer.raw(delta.rows[singleton.name]?.first { $0.id == session.spaceID }?.live?.body ?? "null")
        }
        for (name, key) in layout.listKeys {
            let rows = delta.rows[key] ?? []
            writer.raw(",\"\(name)\":{\"updated\":[")
            for (index, row) in rows.filter({ !$0.deleted }).enumerated() {
                if index > 0 { writer.raw(",") }
                writer.raw(row.body ?? "null")
            }
            writer.raw("],\"deleted\":")
            writer.value(.array(rows.filter(\.deleted).map { .string($0.id) }))
            writer.raw("}")
        }
        for singleton in layout.accountScoped {
            writer.raw(",\"\(singleton.name)\":")
            writer.raw(delta.rows[singleton.name]?.first { $0.id == session.accountID }?.live?.body ?? "null")
        }
        writer.raw("}")
        return SyncAnswer(date: date, .whole(writer.bytes))
    }

    /// Every live row of a bundle (`sync: false`), streamed: from the group's pinned snapshot as the answer is
    /// written, else from a snapshot of its own read by a producer, as a full list is (`streamedFullList`).
    func streamedBundle(_ session: Session, _ layout: BundleLayout, ifNoneMatch: String?) async throws -> SyncAnswer {
        if let snapshot {
            let counter = try await snapshot.counter(spaceID: session.spaceID)
            let date = try await token(counter.version, counter.lineage, session)
            if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
            return SyncAnswer(date: date, .cursor { emit in try await Self.writeBundle(layout, session, date: date, from: snapshot, emit) })
        }
        let store = self.store
        let spaceID = session.spaceID
        return try await streamedAnswer(session, ifNoneMatch: ifNoneMatch) { stream, identity in
            try await store.withReadSnapshot { snapshot in
                let counter = try await snapshot.counter(spaceID: spaceID)
                let date = identity.token(spaceID: spaceID, version: counter.version, history: counter.lineage.history)
                stream.setDate(date)
                try await Self.writeBundle(layout, session, date: date, from: snapshot) { try await stream.send($0) }
            }
        }
    }

    /// The bytes of a bundle's `sync: false` answer at `date`, read from `snapshot` and handed to `emit` chunk by
    /// chunk: the same bytes as the answer built whole, with each list's rows oldest change first.
    static func writeBundle(
        _ layout: BundleLayout, _ session: Session, date: String, from snapshot: any SnapshotReads,
        _ emit: (ByteBuffer) async throws -> Void
    ) async throws {
        var head = JSONWriter(capacity: 1024)
        head.raw("{\"date\":")
        head.string(date)
        head.raw(",\"sync\":false")
        for singleton in layout.familyScoped {
            head.raw(",\"\(singleton.name)\":")
            head.raw(try await singletonBody(singleton, id: session.spaceID, session, snapshot))
        }
        var chunks = JSONChunks()
        chunks.raw(head.bytes)
        for (name, key) in layout.listKeys {
            var open = JSONWriter(capacity: 64)
            open.raw(",\"\(name)\":{\"updated\":[")
            chunks.raw(open.bytes)
            chunks.beginArray()
            try await snapshot.forEachLivePage(spaceID: session.spaceID, collection: key) { bodies in
                for chunk in chunks.add(bodies) { try await emit(chunk) }
            }
            chunks.raw("],\"deleted\":[]}")
        }
        var tail = JSONWriter(capacity: 1024)
        for singleton in layout.accountScoped {
            tail.raw(",\"\(singleton.name)\":")
            tail.raw(try await singletonBody(singleton, id: session.accountID, session, snapshot))
        }
        tail.raw("}")
        chunks.raw(tail.bytes)
        try await emit(chunks.rest())
    }

    /// A singleton's stored body in `snapshot`, or `null` when it has none.
    private static func singletonBody(
        _ singleton: CollectionSpec, id: String, _ session: Session, _ snapshot: any SnapshotReads
    ) async throws -> String {
        try await snapshot.item(spaceID: session.spaceID, key: ItemKey(collection: singleton.name, id: id))?.live?.body ?? "null"
    }
}
