/// The delta batcher's decisions as a value (`DeltaBatcher` carries them out: the continuations of requests and
/// workers, the statements): which requests a statement takes, which worker runs it, who is answered when a request
/// is cancelled, a statement ends or the service stops. Requests and workers are ids; every transition is a line of a
/// table in its test.
package struct DeltaBatcherState: Sendable {
    /// What a new request is answered.
    package enum RequestAction: Equatable, Sendable {
        /// The service has stopped: 503.
        case refuse
        /// Every worker is busy: it waits for the next one free.
        case queued
        /// An idle worker takes the waiting requests (this one among them) into its statement now.
        case wake(worker: Int, batch: [Int])
    }

    /// What a worker ready for work does.
    package enum WorkerAction: Equatable, Sendable {
        /// Runs one statement for these requests.
        case run([Int])
        /// Waits for the next request.
        case idle
        /// Ends: the service has stopped.
        case stop
    }

    let maxBatch: Int
    /// Requests not yet in a statement, in arrival order.
    private(set) var queue: [Int] = []
    /// Requests not yet answered, queued or in a running statement: whoever removes one answers it.
    private(set) var pending: Set<Int> = []
    /// Workers waiting for requests, longest waiting first.
    private(set) var idle: [Int] = []
    /// Statements started so far.
    package private(set) var statements = 0
    private(set) var stopped = false

    package init(maxBatch: Int) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Requests waiting for a statement.
    package var waiting: Int { queue.count }

    /// Request `id` arrives.
    package mutating func request(_ id: Int) -> RequestAction {
        if stopped { return .refuse }
        pending.insert(id)
        queue.append(id)
        guard !idle.isEmpty, let batch = take() else { return .queued }
        return .wake(worker: idle.removeFirst(), batch: batch)
    }

    /// Worker `worker` is ready for a statement.
    package mutating func workerReady(_ worker: Int) -> WorkerAction {
        if stopped { return .stop }
        if let batch = take() { return .run(batch) }
        idle.append(worker)
        return .idle
    }

    /// Request `id`'s task is cancelled: true when it was still unanswered (it is answered cancelled now; a statement
    /// it is part of runs on for the others).
    package mutating func cancel(_ id: Int) -> Bool {
        queue.removeAll { $0 == id }
        return pending.remove(id) != nil
    }

    /// The statement of `batch` ended: the requests of it still unanswered, to answer with its result (those cancelled
    /// meanwhile were answered already).
    package mutating func statementEnded(_ batch: [Int]) -> [Int] {
        batch.filter { pending.remove($0) != nil }
    }

    /// The service stops: the idle workers end, the queued requests are refused (those in a running statement are
    /// answered by it).
    package mutating func stop() -> (workers: [Int], refused: [Int]) {
        stopped = true
        defer {
            idle = []
            queue = []
        }
        for id in queue { pending.remove(id) }
        return (idle, queue)
    }

    /// The next statement's requests, when some wait.
    private mutating func take() -> [Int]? {
        guard !queue.isEmpty else { return nil }
        let batch = Array(queue.prefix(maxBatch))
        queue.removeFirst(batch.count)
        statements += 1
        return batch
    }
}
