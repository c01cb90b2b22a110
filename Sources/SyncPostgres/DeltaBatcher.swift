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

    private struct State {
        var statements = 0
        var nextID = 0
        /// Requests not yet in a statement, in arrival order.
        var queue: [Int] = []
        /// Every request not yet answered, queued or in a running statement: whoever removes one resumes it.
        var waiters: [Int: Waiter] = [:]
        /// Workers waiting for requests.
        var idle: [CheckedContinuation<[Int]?, Never>] = []
        var stopped = false
    }

    private let state = Mutex(State())
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
    }

    /// Runs the workers until cancelled or shut down gracefully (after the server that sends the requests).
    func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<maxRunning { group.addTask { await self.work() } }
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
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Delta?, any Error>) in
                let (stopped, worker, batch) = state.withLock { state -> (Bool, CheckedContinuation<[Int]?, Never>?, [Int]?) in
                    if state.stopped { return (true, nil, nil) }
                    state.waiters[id] = Waiter(call: call, prepared: prepared, continuation: continuation)
                    state.queue.append(id)
                    guard !state.idle.isEmpty else { return (false, nil, nil) }
                    return (false, state.idle.removeFirst(), Self.take(&state, maxBatch: maxBatch))
                }
                if stopped { continuation.resume(throwing: SyncError.unavailable) }
                worker?.resume(returning: batch)
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.queue.removeAll { $0 == id }
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The next statement's requests, when some wait.
    private static func take(_ state: inout State, maxBatch: Int) -> [Int]? {
        guard !state.queue.isEmpty else { return nil }
        let batch = Array(state.queue.prefix(maxBatch))
        state.queue.removeFirst(batch.count)
        state.statements += 1
        return batch
    }

    /// Statements started so far, and requests waiting for one (tests).
    var counts: (statements: Int, waiting: Int) { state.withLock { ($0.statements, $0.queue.count) } }

    /// One worker: a statement for whoever waits, then the next, until the service stops.
    private func work() async {
        while let batch = await nextBatch() { await run(batch) }
    }

    /// The requests waiting now, else the next to come; nil once the service stops.
    private func nextBatch() async -> [Int]? {
        await withCheckedContinuation { (worker: CheckedContinuation<[Int]?, Never>) in
            let ready: [Int]?? = state.withLock { state in
                if state.stopped { return .some(nil) }
                if let batch = Self.take(&state, maxBatch: maxBatch) { return .some(batch) }
                state.idle.append(worker)
                return nil
            }
            if let ready { worker.resume(returning: ready) }
        }
    }

    /// Stops the workers (once their statements end) and answers every waiting request 503.
    private func stop() {
        let (idle, waiting) = state.withLock { state in
            state.stopped = true
            defer {
                state.idle = []
                state.queue = []
            }
            return (state.idle, state.queue.compactMap { state.waiters.removeValue(forKey: $0) })
        }
        for worker in idle { worker.resume(returning: nil) }
        for waiter in waiting { waiter.continuation.resume(throwing: SyncError.unavailable) }
    }

    private func run(_ ids: [Int]) async {
        let calls: [(id: Int, call: DeltaRequest, prepared: Bool)] = state.withLock { state in
            ids.compactMap { id in state.waiters[id].map { (id, $0.call, $0.prepared) } }
        }
        guard let prepared = calls.first?.prepared else { return }
        let result: Result<[Delta?], any Error>
        do {
            let (client, logger) = (self.client, self.logger)
            let onlyCalls = calls.map(\.call)
            result = .success(
                try await Deadline.run(within: deadline, timers: timers) {
                    try await client.withConnection { conn in try await Self.read(onlyCalls, conn: conn, prepared: prepared, logger: logger) }
                })
        } catch {
            result = .failure(error)
        }
        // Those cancelled meanwhile were answered already; the others are taken back in one go, then answered.
        let waiters = state.withLock { state in calls.map { state.waiters.removeValue(forKey: $0.id) } }
        for (index, waiter) in waiters.enumerated() {
            guard let waiter else { continue }
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
                statement.familyIDs.append(call.familyID)
                statement.collections.append(collection)
                statement.after.append(call.since ?? 0)
                statement.includeDeleted.append(call.since != nil)
            }
        }
        var counters = [FamilyCounter?](repeating: nil, count: calls.count)
        var items = calls.map { _ in DeltaRows() }
        for try await (call, fv, fh, collection, id, iv, deleted, body, sortMs, sortVersion, tag) in try await conn.run(
            statement, prepared: prepared, logger: logger)
        {
            let index = Int(call)
            counters[index] = FamilyCounter(version: fv, horizon: fh)
            if let collection, let id, let iv, let deleted {
                items[index].append(
                    StoredItem(id: id, version: iv, deleted: deleted, body: body, sortMs: sortMs, sortVersion: sortVersion, tag: tag),
                    to: collection)
            }
        }
        return calls.indices.map { index in
            counters[index].map { items[index].delta(version: $0.version, horizon: $0.horizon) }
        }
    }
}
