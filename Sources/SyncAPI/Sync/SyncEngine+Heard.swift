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

    /// The answer of a delta from `since` to the counter the hub heard the space at, kept when an earlier delta of the
    /// same list read that same range (`keepDelta`): the bytes of that read, with no read of its own. Exact for the
    /// reason the map is (an entry is a value the counter had, and the answer of a range is a function of the range),
    /// as of the moment the space was at the entry. Not for lists private to each account (`FullListCache.keeps`).
    func keptDelta(_ session: Session, _ collection: CollectionSpec, _ since: DatePosition, ifNoneMatch: String?) async throws -> SyncAnswer? {
        let name = collection.storageName(for: session.accountID)
        guard snapshot == nil, fullLists.keeps(name), let heard, let at = heard.position(space: session.spaceID),
            at.history == since.history, at.version > since.version
        else { return nil }
        let date = try await token(at.version, SpaceLineage(history: at.history, forkFrom: "", forkVersion: 0), session)
        guard let bytes = fullLists.answer(date: Self.rangeKey(since, to: date), collection: name) else { return nil }
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        return SyncAnswer(date: date, .whole(bytes))
    }

    /// Keeps a delta's answer read from the primary outside a group, under its range, for `keptDelta`.
    func keepDelta(_ answer: SyncAnswer, _ session: Session, _ collection: CollectionSpec, _ since: DatePosition) {
        let name = collection.storageName(for: session.accountID)
        guard snapshot == nil, heard != nil, fullLists.keeps(name), case .whole(let bytes) = answer.content else { return }
        fullLists.keep(bytes, date: Self.rangeKey(since, to: answer.date), collection: name)
    }

    /// A range's key among the cache's dates: the position it starts from (whatever the generation its date named),
    /// then the date it ends at.
    static func rangeKey(_ since: DatePosition, to date: String) -> String {
        "\(since.version)~\(since.history)>\(date)"
    }
}
