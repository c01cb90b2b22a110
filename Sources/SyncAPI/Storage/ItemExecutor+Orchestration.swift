/// The item orchestration, written once for both backends on top of their `ItemStatements`: writes ordered by the
/// family lock, deltas and pages read in one snapshot.
extension ItemExecutor {
    package func readItem(spaceID: String, key: ItemKey) async throws -> StoredItem? {
        try await inSingleStatement { try await $0.item(spaceID: spaceID, key: key) }
    }

    /// Locks the family, reads the row (and its parent, for a child), lets `plan` decide, and stores the decided rows
    /// at one new version of the family's counter, all in one transaction (so versions are in commit order).
    package func writeItem(
        spaceID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await inWriteTransaction { statements in
            // Lock the family row first: it orders this write against every other write of the family.
            guard let family = try await statements.family(spaceID, lock: true) else { throw SyncError.unauthorized }
            let existing = try await statements.item(spaceID: spaceID, key: key)
            var parentRow: StoredItem?
            if let parent { parentRow = try await statements.item(spaceID: spaceID, key: parent) }
            switch try plan(WriteContext(existing: existing, parent: parentRow, usage: family.usage)) {
            case .unchanged:
                return WriteOutcome(item: existing, changed: false)
            case .write(let rows):
                // The first row bumps the counter; the others share its version.
                var version: Int64?
                var result = existing
                for row in rows {
                    let stored = try await statements.store(row, spaceID: spaceID, version: version, nowMs: nowMs)
                    version = stored.version
                    if row.key == key {
                        result = stored
                        // The media the item named before and names now, in the same transaction (and, on
                        // PostgreSQL, under the family lock the media purge takes too).
                        let media = MediaURL.hashes(in: [existing?.body, row.body])
                        if !media.isEmpty { try await statements.touchMedia(spaceID: spaceID, hashes: media, nowMs: nowMs) }
                    }
                }
                return WriteOutcome(item: result, changed: true)
            }
        }
    }

    package func readDelta(spaceID: String, collections: [String], since: Int64?) async throws -> Delta {
        try await inSingleStatement { statements in
            guard let delta = try await statements.delta(spaceID: spaceID, collections: collections, since: since) else {
                throw SyncError.unauthorized
            }
            return delta
        }
    }

    /// The family's counter and its lists' rows as `/verify` digests them, in one snapshot.
    package func readVerifyRows(
        spaceID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void
    ) async throws -> SpaceCounter {
        try await inSnapshot { statements in
            guard let family = try await statements.family(spaceID, lock: false) else { throw SyncError.unauthorized }
            for collection in collections { try await statements.verifyRows(spaceID: spaceID, collection: collection, each) }
            return SpaceCounter(version: family.version, lineage: family.lineage)
        }
    }

    /// Everything a paginated sync decides from (protocol §4), in one snapshot.
    package func readPageSync(spaceID: String, query: PageQuery, since: Int64?) async throws -> PageSyncRows {
        try await inSnapshot { statements in
            guard let family = try await statements.family(spaceID, lock: false) else { throw SyncError.unauthorized }
            var anchor: StoredItem?
            if let anchorID = query.anchorID {
                let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                anchor = try await statements.item(spaceID: spaceID, key: key)
            }
            let limit = query.limit + 1
            var changed: [StoredItem] = []
            if let since, query.anchorID == nil || anchor != nil {
                changed = try await statements.liveItems(
                    query, spaceID: spaceID, changedAfter: since, bound: anchor.map(AnchorBound.atOrAbove), oldestFirst: false,
                    limit: limit, budget: query.byteBudget)
            }
            var top: [StoredItem] = []
            let answerable = PageSyncRows.answerable(
                since: since, version: family.version, horizon: family.horizon, anchorID: query.anchorID, anchor: anchor)
            let firstPage = PageSyncRows.needsFirstPage(
                answerable: answerable, changed: changed.count, fits: !changed.contains { $0.body == nil }, limit: query.limit)
            if firstPage {
                // The answer is not made of the changes: their bodies go.
                changed = changed.map(\.withheld)
                top = try await statements.liveItems(
                    query, spaceID: spaceID, changedAfter: nil, bound: nil, oldestFirst: false, limit: limit, budget: query.byteBudget)
            }
            var belowAnchor = false
            if let anchor {
                belowAnchor = try await !statements.liveItems(
                    query, spaceID: spaceID, changedAfter: nil, bound: .below(anchor), oldestFirst: false, limit: 1, budget: nil
                ).isEmpty
            }
            let bottom = try await statements.liveItems(
                query, spaceID: spaceID, changedAfter: nil, bound: nil, oldestFirst: true, limit: 1, budget: nil
            ).first
            // Deleted after the date, or changed after it and now outside the filter: gone for this client (§4).
            var deleted: [String] = []
            if let since { deleted = try await statements.goneIDs(query, spaceID: spaceID, since: since) }
            let parents = PageSyncRows.parents(changed: changed, top: top, limit: query.limit)
            return PageSyncRows(
                version: family.version, horizon: family.horizon, anchor: anchor, changed: changed, top: top,
                belowAnchor: belowAnchor, bottom: bottom, deleted: deleted,
                children: try await Self.children(query, spaceID: spaceID, of: parents, statements), firstPage: firstPage,
                lineage: family.lineage)
        }
    }

    /// The live items below the anchor with their children, in one snapshot; nil when the anchor never existed.
    package func readPage(spaceID: String, query: PageQuery) async throws -> PageRows? {
        try await inSnapshot { statements in
            var bound: AnchorBound?
            if let anchorID = query.anchorID {
                let key = ItemKey(collection: query.collection, parentID: query.parentID, id: anchorID)
                guard let anchor = try await statements.item(spaceID: spaceID, key: key) else { return nil }
                bound = .below(anchor)
            }
            let items = try await statements.liveItems(
                query, spaceID: spaceID, changedAfter: nil, bound: bound, oldestFirst: false, limit: query.limit + 1,
                budget: query.byteBudget)
            let parents = PageSyncRows.parents(changed: [], top: items, limit: query.limit)
            return PageRows(items: items, children: try await Self.children(query, spaceID: spaceID, of: parents, statements))
        }
    }

    /// The newest `limit + 1` live children of each parent (one more than asked: the engine learns whether more exist),
    /// their bodies kept within the query's byte budget over the parents in order.
    private static func children(
        _ query: PageQuery, spaceID: String, of parents: [String], _ statements: Statements
    ) async throws -> [String: [StoredItem]] {
        guard let children = query.children, !parents.isEmpty else { return [:] }
        return try await statements.children(
            ChildrenQuery(collection: children.collection, limit: children.limit + 1), spaceID: spaceID, of: parents,
            budget: query.byteBudget)
    }
}
