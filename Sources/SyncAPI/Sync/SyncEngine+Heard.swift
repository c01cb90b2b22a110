extension SyncEngine {
    /// The empty delta of a space whose counter the change hub heard is exactly at `since` (value and history): nothing
    /// changed since, and no read is needed (`HeardCounters` says why that is exact). Nil when it may have moved, and
    /// inside a group's snapshot, whose reads answer as of that snapshot.
    func unchangedDelta(_ session: Session, _ since: DatePosition) -> Delta? {
        guard snapshot == nil, let heard, heard.isAt(space: session.spaceID, since) else { return nil }
        return Delta(version: since.version, horizon: 0, rows: [:], lineage: SpaceLineage(history: since.history, forkFrom: "", forkVersion: 0))
    }

    /// Runs a delta `read`, and records the counter it found when it read the primary while the hub's notices flowed
    /// (a ticket taken before it: a read that began before a missed notice or a write of this instance records nothing).
    func heardDelta(_ session: Session, _ read: () async throws -> Delta) async throws -> Delta {
        guard snapshot == nil, readsFromPrimary, let heard, let ticket = heard.ticket() else { return try await read() }
        let delta = try await read()
        heard.read(space: session.spaceID, version: delta.version, history: delta.lineage.history, ticket: ticket)
        return delta
    }
}
