extension SyncEngine {
    /// The first `delta` call each of these sync calls (endpoint, date) makes, computed as its handler computes it: a
    /// full list's delta after an answerable date, a bundle's delta. Calls of other endpoints, and dates that do not
    /// parse, are left out (their handlers answer them as always). A group reads these ahead in one statement.
    public func deltaRequests(_ session: Session, calls: [(endpoint: String, date: String?)]) async -> [DeltaRequest] {
        var requests: [DeltaRequest] = []
        for (endpoint, date) in calls {
            let names: [String]
            let isList: Bool
            if let list = collections.lists.first(where: { $0.syncEndpoint == endpoint }) {
                (names, isList) = ([list.storageName(for: session.accountID)], true)
            } else if let layout = BundleLayout(endpoint, collections, accountID: session.accountID) {
                (names, isList) = (layout.names, false)
            } else {
                continue
            }
            let since: Int64?
            do { since = try await position(date, session, for: names)?.version } catch { continue }
            // As `fullListSync`: no delta for a list without a date, or at position 0 (the whole list answers those).
            if isList, (since ?? 0) <= 0 { continue }
            requests.append(DeltaRequest(spaceID: session.spaceID, collections: names, since: since))
        }
        return requests
    }

    /// `GET /ctcsync`, `/evtsync`, `/plcsync` (protocol §3).
    public func fullListSync(
        _ session: Session, _ collection: CollectionSpec, date: String?, ifNoneMatch: String?
    ) async throws
        -> SyncAnswer
    {
        try Self.requireRead(session, collection)
        if let endpoint = collection.syncEndpoint, let answer = heardAnswer(endpoint: endpoint, date: date, ifNoneMatch: ifNoneMatch) {
            return answer
        }
        // A date at position 0 names the state before the family's first write: the whole list answers it exactly,
        // streamed, where a delta would hold every change and tombstone ever made.
        if let since = try await position(date, session, for: [collection.name]), since.version > 0 {
            if let unchanged = unchangedDelta(session, since) {
                return try await deltaAnswer(session, collection, unchanged, ifNoneMatch: ifNoneMatch)
            }
            let name = collection.storageName(for: session.accountID)
            if let kept = try await keptRange(session, name: name, since, ifNoneMatch: ifNoneMatch) { return kept }
            let delta = try await heardDelta(session) {
                try await reads.delta(
                    spaceID: session.spaceID, collections: [collection.storageName(for: session.accountID)], since: since.version)
            }
            if delta.answers(since), !delta.overflowed {
                let answer = try await deltaAnswer(session, collection, delta, ifNoneMatch: ifNoneMatch)
                keepRange(answer, name: name, since)
                return answer
            }
        }
        // No date, one that cannot be answered exactly, or one whose changes are more than a delta
        // holds (`Delta.byteBudget`, a date from long ago or forged): the whole list, streamed from a cursor, or,
        // inside a group, from the group's snapshot as the answer is written.
        if let snapshot { return try await pinnedFullList(session, collection, snapshot, ifNoneMatch: ifNoneMatch) }
        let name = collection.storageName(for: session.accountID)
        if fullLists.keeps(name) {
            // The counter alone (batched with other reads): a list kept at its date is answered without its rows.
            let counter = try await routedReads.delta(spaceID: session.spaceID, collections: [], since: nil)
            let date = try await token(counter.version, counter.lineage, session)
            if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
            if let kept = fullLists.answer(date: date, collection: name) { return SyncAnswer(date: date, .whole(kept)) }
        }
        return try await streamedFullList(session, collection, ifNoneMatch: ifNoneMatch)
    }

    /// The changes of a full list after an answerable date.
    func deltaAnswer(_ session: Session, _ collection: CollectionSpec, _ delta: Delta, ifNoneMatch: String?) async throws -> SyncAnswer {
        let rows = delta.rows[collection.storageName(for: session.accountID)] ?? []
        let date = try await token(delta.version, delta.lineage, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        var writer = JSONWriter(capacity: 64 + rows.reduce(0) { $0 + ($1.body?.utf8.count ?? $1.id.utf8.count + 3) })
        writer.raw("{\"date\":")
        writer.string(date)
        writer.raw(",\"sync\":true,\"updated\":[")
        var first = true
        for row in rows where !row.deleted {
            if !first { writer.raw(",") }
            first = false
            writer.raw(row.body ?? "null")
        }
        writer.raw("],\"deleted\":")
        writer.value(.array(rows.filter(\.deleted).map { .string($0.id) }))
        writer.raw("}")
        return SyncAnswer(date: date, .whole(writer.bytes))
    }
}
