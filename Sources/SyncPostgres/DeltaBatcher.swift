import Logging
import PostgresNIO
import ServiceLifecycle
import SyncAPI
import Synchronization

/// Reads the deltas of concurrent requests, of any families, in one statement.
///
/// A delta is one short statement, and on a loaded server its round trip costs more than the statement itself (the
/// stack's floor, `bench/floor`: Hummingbird and PostgresNIO answering the delta's statement and nothing else, reaches
/// a fraction of pgbench's rate for it). So deltas that wait for a connection are read together: `maxRunning` workers
/// each run one statement at a time, a request that finds them all busy waits, and the next worker free takes every
/// waiting request (at most `maxBatch`). A lone request never waits for company: an idle worker starts its statement
/// at once. Each request's answer is what its own statement would have read (`PreparedStatements.BatchedDeltas` reads
/// every call's family counter and rows in the one statement's snapshot); a family that does not exist answers nil,
/// as alone.
///
/// The workers are the child tasks of `run()`, a service of the application (or of `OpenedStore.runClient`): nothing
/// outlives it. A request that is cancelled (its deadline, its client gone) stops waiting at once; the statement it
/// was part of runs on for the others. Once the service stops, waiting and later requests answer 503.
final class DeltaBatcher: Service, Sendable {
    private struct Waiter {
        let call: DeltaRequest
        let prepared: Bool
        let continuation: CheckedContinuation<Delta?, any Error>
    }

    /// The decisions (`DeltaBatcherState`), and what carries them out: each request's and idle worker's continuation.
    private struct Effects {
        var state: DeltaBatcherState
        var nextID = 0
        var waiters: [Int: Waiter] = [:]
        var workers: [Int: CheckedContinuation<[Int]?, Never>] = [:]
    }

    private let effects: Mutex<Effects>
    private let client: PostgresClient
    private let logger: Logger
    private let deadline: Duration
    private let timers: TimerWheel
    let maxRunning: Int
    let maxBatch: Int

    init(client: PostgresClient, logger: Logger, timers: TimerWheel, deadline: Duration, maxRunning: Int, maxBatch: Int = 64) {
        self.timers = timers
        self.client = client
        self.logger = logger
        self.deadline = deadline
        self.maxRunning = max(1, maxRunning)
        self.maxBatch = max(1, maxBatch)
        self.effects = Mutex(Effects(state: DeltaBatcherState(maxBatch: maxBatch)))
    }

    /// Runs the workers until cancelled or shut down gracefully (after the server that sends the requests).
    func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withTaskGroup(of: Void.self) { group in
                    for worker in 0..<maxRunning { group.addTask { await self.work(worker) } }
                }
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
    }

    /// The delta of `call`, read in a statement with whatever other calls are waiting; nil when its family does not
    /// exist.
    func delta(_ call: DeltaRequest, prepared: Bool) async throws -> Delta? {
        let id = effects.withLock { effects in
            effects.nextID += 1
            return effects.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Delta?, any Error>) in
                let action = effects.withLock { effects -> (DeltaBatcherState.RequestAction, CheckedContinuation<[Int]?, Never>?) in
                    let action = effects.state.request(id)
                    guard action != .refuse else { return (action, nil) }
                    effects.waiters[id] = Waiter(call: call, prepared: prepared, continuation: continuation)
                    guard case .wake(let worker, _) = action else { return (action, nil) }
                    return (action, effects.workers.removeValue(forKey: worker))
                }
                switch action {
                case (.refuse, _): continuation.resume(throwing: SyncError.unavailable)
                case (.wake(_, let batch), let worker?): worker.resume(returning: batch)
                default: break
                }
            }
        } onCancel: {
            let waiter = effects.withLock { effects in
                effects.state.cancel(id) ? effects.waiters.removeValue(forKey: id) : nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Statements started so far, and requests waiting for one (tests).
    var counts: (statements: Int, waiting: Int) { effects.withLock { ($0.state.statements, $0.state.waiting) } }

    /// One worker: a statement for whoever waits, then the next, until the service stops.
    private func work(_ worker: Int) async {
        while let batch = await nextBatch(worker) { await run(batch) }
    }

    /// The requests waiting now, else the next to come; nil once the service stops.
    private func nextBatch(_ worker: Int) async -> [Int]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[Int]?, Never>) in
            let ready: [Int]?? = effects.withLock { effects in
                switch effects.state.workerReady(worker) {
                case .stop: return .some(nil)
                case .run(let batch): return .some(batch)
                case .idle:
                    effects.workers[worker] = continuation
                    return nil
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Stops the workers (once their statements end) and answers every waiting request 503.
    private func stop() {
        let (idle, refused) = effects.withLock { effects in
            let (workers, refused) = effects.state.stop()
            return (workers.compactMap { effects.workers.removeValue(forKey: $0) }, refused.compactMap { effects.waiters.removeValue(forKey: $0) })
        }
        for worker in idle { worker.resume(returning: nil) }
        for waiter in refused { waiter.continuation.resume(throwing: SyncError.unavailable) }
    }

    private func run(_ ids: [Int]) async {
        let calls: [(id: Int, call: DeltaRequest, prepared: Bool)] = effects.withLock { effects in
            ids.compactMap { id in effects.waiters[id].map { (id, $0.call, $0.prepared) } }
        }
        guard let prepared = calls.first?.prepared else {
            _ = effects.withLock { $0.state.statementEnded(ids) }
            return
        }
        let result: Result<[Delta?], any Error>
        do {
            let (client, logger) = (self.client, self.logger)
            let onlyCalls = calls.map(\.call)
            result = .success(
                try await Deadline.run(within: deadline, timers: timers) { _ in
                    try await client.withConnection { conn in try await Self.read(onlyCalls, conn: conn, prepared: prepared, logger: logger) }
                })
        } catch {
            result = .failure(error)
        }
        // Those cancelled meanwhile were answered already; the others are taken back in one go, then answered.
        let answered = effects.withLock { effects -> [(index: Int, waiter: Waiter)] in
            let still = Set(effects.state.statementEnded(ids))
            return calls.enumerated().compactMap { index, call in
                guard still.contains(call.id), let waiter = effects.waiters.removeValue(forKey: call.id) else { return nil }
                return (index, waiter)
            }
        }
        for (index, waiter) in answered {
            switch result {
            case .success(let deltas): waiter.continuation.resume(returning: deltas[index])
            case .failure(let error): waiter.continuation.resume(throwing: error)
            }
        }
    }

    /// The deltas of `calls` from one statement, in order; nil for a call whose family does not exist.
    static func read(_ calls: [DeltaRequest], conn: PostgresConnection, prepared: Bool, logger: Logger) async throws -> [Delta?] {
        var statement = PreparedStatements.BatchedDeltas()
        for (index, call) in calls.enumerated() {
            // No collection (the counter alone): one call row that matches no item, as `Delta` with an empty array.
            var seen = Set<String>()
            for collection in call.collections.isEmpty ? [""] : call.collections where seen.insert(collection).inserted {
                statement.calls.append(Int64(index))
                statement.spaceIDs.append(call.spaceID)
                statement.collections.append(collection)
                statement.after.append(call.since ?? 0)
                statement.includeDeleted.append(call.since != nil)
            }
        }
        var counters = [FamilyCounter?](repeating: nil, count: calls.count)
        var items = calls.map { _ in DeltaRows() }
        for try await (call, fv, fh, lineage, collection, id, iv, deleted, body, sortMs, sortVersion, tag) in try await conn.run(
            statement, prepared: prepared, logger: logger)
        {
            let index = Int(call)
            counters[index] = FamilyCounter(version: fv, horizon: fh, lineage: SpaceLineage.read(lineage))
            if let collection, let id, let iv, let deleted {
                items[index].append(
                    StoredItem(id: id, version: iv, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag),
                    to: collection)
            }
        }
        return calls.indices.map { index in
            counters[index].map { items[index].delta(version: $0.version, horizon: $0.horizon, lineage: $0.lineage) }
        }
    }
}
