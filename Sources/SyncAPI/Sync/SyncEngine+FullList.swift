extension SyncEngine {
    /// `GET /ctcsync`, `/evtsync`, `/plcsync` (protocol §3).
    public func fullListSync(
        _ session: Session, _ collection: CollectionSpec, date: String?, ifNoneMatch: String?
    ) async throws
        -> SyncAnswer
    {
        var since = try await position(date, session)
        var delta = try await store.delta(familyID: session.familyID, collection: collection.name, since: since)
        if let position = since, position > delta.version || position < delta.horizon {
            // A position never reached, or older than purged tombstones: only a full answer is exact.
            since = nil
            delta = try await store.delta(familyID: session.familyID, collection: collection.name, since: nil)
        }
        let date = try await token(delta.version, session)
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, body: [], notModified: true) }
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
        writer.raw("],\"deleted\":")
        writer.value(.array(delta.rows.filter(\.deleted).map { .string($0.id) }))
        writer.raw("}")
        return SyncAnswer(date: date, body: writer.bytes, notModified: false)
    }
}
