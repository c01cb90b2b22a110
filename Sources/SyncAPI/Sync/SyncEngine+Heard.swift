extension SyncEngine {
    /// The empty delta of a space whose counter the change hub heard is exactly at `since` (value and history): nothing
    /// changed since, and no read is needed (`HeardCounters` says why that is exact). Nil when it may have moved, and
    /// inside a group's snapshot, whose reads answer as of that snapshot.
    func unchangedDelta(_ session: Session, _ since: DatePosition) -> Delta? {
        guard snapshot == nil, let heard, heard.isAt(space: session.spaceID, since) else { return nil }
        return Self.unchanged(since)
    }

    /// The delta of no change at `since`.
    static func unchanged(_ since: DatePosition) -> Delta {
        Delta(version: since.version, horizon: 0, rows: [:], lineage: SpaceLineage(history: since.history, forkFrom: "", forkVersion: 0))
    }

    /// Runs a delta `read`, and records the counter it found when it read the primary while the hub's notices flowed
    /// (a ticket taken before it: a read that began before a missed notice or a write of this instance records nothing).
    func heardDelta(_ session: Session, _ read: () async throws -> Delta) async throws -> Delta {
        guard snapshot == nil, readsFromPrimary, let heard, let ticket = heard.ticket() else { return try await read() }
        let delta = try await read()
        heard.read(space: session.spaceID, version: delta.version, history: delta.lineage.history, ticket: ticket)
        return delta
    }

    /// The answer of a delta from `since` to `at` (the counter the hub heard the space at: the current entry when nil),
    /// kept when an earlier delta of the same list or bundle (`name`, as `keepRange` kept it) read that same range: the
    /// bytes of that read, with no read of its own. Exact for the reason the map is (an entry is a value the counter
    /// had, and the answer of a range is a function of the range), as of the moment the space was at the entry. Not for
    /// lists private to each account (`FullListCache.keeps`).
    func keptRange(
        _ session: Session, name: String, _ since: DatePosition, at heardAt: DatePosition? = nil, ifNoneMatch: String?
    ) async throws -> SyncAnswer? {
        guard snapshot == nil, fullLists.keeps(name), let heard, let at = heardAt ?? heard.position(space: session.spaceID),
            at.history == since.history, at.version > since.version
        else { return nil }
        let date = try await token(at.version, SpaceLineage(history: at.history, forkFrom: "", forkVersion: 0), session)
        guard let bytes = fullLists.answer(date: Self.rangeKey(since, to: date), collection: name) else { return nil }
        if Self.matches(ifNoneMatch, date: date) { return SyncAnswer(date: date, .notModified) }
        return SyncAnswer(date: date, .whole(bytes))
    }

    /// Keeps a delta's answer read from the primary (on its own, or in a group's snapshot, which is the primary's), under
    /// its range, for `keptRange`.
    func keepRange(_ answer: SyncAnswer, name: String, _ since: DatePosition) {
        guard snapshot == nil ? readsFromPrimary : snapshotKeepsRanges, heard != nil, fullLists.keeps(name), case .whole(let bytes) = answer.content
        else { return }
        fullLists.keep(bytes, date: Self.rangeKey(since, to: answer.date), collection: name)
    }

    /// Records the counter of a group's snapshot (the primary's, begun after `ticket`) as heard, when the hub holds none
    /// for the space: one statement, so that the group's next runs may be answered from the ranges this one keeps.
    func recordCounter(of pinned: any SnapshotReads, _ session: Session, ticket: UInt64?) async throws {
        guard let heard, let ticket, heard.position(space: session.spaceID) == nil else { return }
        let counter = try await pinned.counter(spaceID: session.spaceID)
        heard.read(space: session.spaceID, version: counter.version, history: counter.lineage.history, ticket: ticket)
    }

    /// A range's key among the cache's dates: the position it starts from (whatever the generation its date named),
    /// then the date it ends at.
    static func rangeKey(_ since: DatePosition, to date: String) -> String {
        "\(since.version)~\(since.history)>\(date)"
    }

    /// The cache name of a bundle's answers: they carry the account's own singletons.
    static func bundleCacheName(_ endpoint: String, _ session: Session) -> String {
        "\(endpoint)@\(session.accountID)"
    }

    /// Where a group's sub-request finds its answer among `ReadSource.heard`'s.
    public static func heardKey(endpoint: String, date: String?) -> String {
        "\(endpoint) \(date ?? "")"
    }

    /// The answer given by the hub for this call of a group's run, if the run was answered so (`ReadSource.heard`).
    func heardAnswer(endpoint: String, date: String?, ifNoneMatch: String?) -> SyncAnswer? {
        guard let answer = heardAnswers?[Self.heardKey(endpoint: endpoint, date: date)] else { return nil }
        if Self.matches(ifNoneMatch, date: answer.date) { return SyncAnswer(date: answer.date, .notModified) }
        return answer
    }

    /// Whether every call of a group's run (`count` calls, `ahead` its `readAhead`) is a sync read the hub could
    /// answer (a full list or a bundle of the home space): only such a run asks the hub, and keeps its snapshot's
    /// answers for the next.
    func heardEligible(_ count: Int, ahead: [(endpoint: String, date: String?)]) -> Bool {
        heard != nil && ahead.count == count
    }

    /// A group's run of reads answered from what the hub heard, every answer at one counter value (so the run is as
    /// consistent as a snapshot's): when every call is a sync read of the caller's home space whose date is at that
    /// value, or whose range to it is kept. Nil (the run then pins a snapshot) as soon as one is not.
    /// `calls`: the run's `readAhead`, every call of it.
    func heardRun(_ calls: [(endpoint: String, date: String?)], _ session: Session) async throws -> [String: SyncAnswer]? {
        guard let heard, let at = heard.position(space: session.spaceID) else { return nil }
        var answers: [String: SyncAnswer] = [:]
        for (endpoint, date) in calls {
            let answer: SyncAnswer?
            if let list = collections.lists.first(where: { $0.syncEndpoint == endpoint }) {
                // A date the call itself refuses (400) is answered by the call, from a snapshot as always.
                guard let since = (try? await position(date, session, for: [list.name])) ?? nil, since.version > 0 else { return nil }
                if since == at {
                    answer = try await deltaAnswer(session, list, Self.unchanged(since), ifNoneMatch: nil)
                } else {
                    answer = try await keptRange(session, name: list.storageName(for: session.accountID), since, at: at, ifNoneMatch: nil)
                }
            } else if let layout = BundleLayout(endpoint, collections, accountID: session.accountID) {
                guard let since = (try? await position(date, session, for: layout.names)) ?? nil else { return nil }
                if since == at {
                    answer = try await bundleAnswer(session, layout, Self.unchanged(since), since: since, ifNoneMatch: nil)
                } else {
                    answer = try await keptRange(session, name: Self.bundleCacheName(endpoint, session), since, at: at, ifNoneMatch: nil)
                }
            } else {
                return nil
            }
            guard let answer else { return nil }
            answers[Self.heardKey(endpoint: endpoint, date: date)] = answer
        }
        heard.counted(answers.count)
        return answers
    }
}
