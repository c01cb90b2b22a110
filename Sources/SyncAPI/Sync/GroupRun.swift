/// One call of a `POST /group` (protocol §6) as the engine sees it: a read or a write, and the path and `date` it
/// names, from which the engine decides (one rule, `SyncEngine.readAhead`) whether it is a sync call whose first delta
/// a run of reads reads ahead.
public struct GroupCall: Sendable, Equatable {
    public let isRead: Bool
    /// The call's path with its dot segments resolved (`/api/v1/ctcsync`), nil when it has none.
    public let path: String?
    /// Its `date` query parameter.
    public let date: String?

    public init(isRead: Bool, path: String?, date: String?) {
        (self.isRead, self.path, self.date) = (isRead, path, date)
    }
}

/// What writes a group's answer into its stream: the route's, which runs each call through the router, with the reads
/// of `reads` (nil: as a direct call would), and refuses a write begun past `startBy`.
public protocol GroupAnswerWriter: Sendable {
    func begin() async throws
    func answer(_ index: Int, reads: ReadSource?, startBy: ContinuousClock.Instant) async throws
    func end() async throws
}

extension SyncEngine {
    /// The runs of a group: consecutive reads share one snapshot; each write runs alone, so later reads see it.
    public static func groupRuns(_ calls: [GroupCall]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var index = 0
        while index < calls.count {
            var end = index + 1
            if calls[index].isRead { while end < calls.count, calls[end].isRead { end += 1 } }
            runs.append(index..<end)
            index = end
        }
        return runs
    }

    /// The sync calls of a run whose first delta is read ahead: a read of one path segment under `/api/v1/` (the
    /// caller's home space; a call under `/spaces/{id}` reads as always) that names a sync endpoint of the model.
    /// Computed once per run (each call of every group asks): over the path's bytes.
    public func readAhead(_ calls: some Sequence<GroupCall>) -> [(endpoint: String, date: String?)] {
        let prefix = "/api/v1/".utf8
        return calls.compactMap { call in
            guard call.isRead, let path = call.path?.utf8, path.starts(with: prefix) else { return nil }
            let endpoint = path.dropFirst(prefix.count)
            guard !endpoint.isEmpty, !endpoint.contains(UInt8(ascii: "/")), let name = String(endpoint),
                collections.isSyncEndpoint(name)
            else { return nil }
            return (name, call.date)
        }
    }

    /// Answers a group: its calls written by `writer` into one answer stream, each run of reads from one snapshot
    /// (with their first deltas read ahead together), a read after a write of the group from the primary, and no write
    /// begun past `limit`. A group whose reads pin a snapshot holds one place in the snapshot budget for its whole
    /// answer (429 before anything starts when there is none). The answer's head waits for its first chunk, so a
    /// database that is away still answers 503 before any byte.
    public func group(
        _ calls: [GroupCall], _ session: Session, limit: Duration, writer makeWriter: (AnswerStream) -> any GroupAnswerWriter
    ) async throws -> AnswerStream {
        let pinsSnapshot = zip(calls, calls.dropFirst()).contains { $0.isRead && $1.isRead }
        let lease = pinsSnapshot ? try await snapshots.lease(for: session) : nil
        let stream = AnswerStream(producerStallLimit: limit, timers: timers)
        lease?.track(stream)
        let writer = makeWriter(stream)
        // No write starts past the group's time limit (protocol §6: no sub-request keeps a group open): one behind a
        // slow answer answers 503, and the client sends it again. Reads are not cut: they answer from the group's
        // snapshot, and a client applies a group of syncs only whole (a phone whose first list takes longer than the
        // limit to download would never sync).
        let startBy = ContinuousClock.now + limit
        let engine = self
        stream.produce(on: producers) {
            defer { lease?.release() }
            do {
                stream.setDate("")
                try await writer.begin()
                // Once a write of the group ran, its reads go where every committed write is seen (a run of reads: the
                // primary's snapshot already; a single read: the primary, never a standby).
                var wrote = false
                for run in Self.groupRuns(calls) {
                    let ahead = run.count > 1 ? engine.readAhead(calls[run]) : []
                    let eligible = run.count > 1 && engine.heardEligible(run.count, ahead: ahead)
                    if eligible, !wrote, let answers = try await engine.heardRun(ahead, session) {
                        // Every read of the run at one counter value the hub heard: no snapshot, no read.
                        for index in run { try await writer.answer(index, reads: .heard(answers), startBy: startBy) }
                    } else if run.count > 1 {
                        // Taken before the snapshot begins: the snapshot's counter may then be recorded as heard.
                        let ticket = eligible ? engine.heard?.ticket() : nil
                        try await engine.store.withReadSnapshot { pinned in
                            try await engine.recordCounter(of: pinned, session, ticket: ticket)
                            let reads = ReadSource.snapshot(
                                try await engine.prefetching(ahead, on: pinned, session), keepsRanges: eligible)
                            for index in run { try await writer.answer(index, reads: reads, startBy: startBy) }
                        }
                    } else {
                        let call = calls[run.lowerBound]
                        try await writer.answer(run.lowerBound, reads: wrote && call.isRead ? .primary : nil, startBy: startBy)
                        if !call.isRead { wrote = true }
                    }
                }
                try await writer.end()
                // Given back before the end, so that the client's next request finds the place free.
                lease?.release()
                stream.finish()
            } catch {
                lease?.release()
                stream.finish(throwing: error)
            }
        }
        _ = try await stream.date(within: limit)
        return stream
    }

    /// The run's snapshot with the deltas its sync calls will read first already read, together (PostgreSQL: one
    /// statement instead of one round trip per call). Only an optimization: a call that asks for anything else reads
    /// it as always, from the same snapshot.
    /// `calls`: the run's `readAhead`.
    func prefetching(
        _ calls: [(endpoint: String, date: String?)], on pinned: any SnapshotReads, _ session: Session
    ) async throws -> any SnapshotReads {
        guard pinned.prefetchesDeltas, calls.count >= 2 else { return pinned }
        let requests = await reading(.snapshot(pinned)).deltaRequests(session, calls: calls)
        return try await pinned.prefetchingDeltas(requests)
    }
}
