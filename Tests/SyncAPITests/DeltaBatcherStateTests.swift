import SyncPostgres
import Testing

/// The delta batcher's decisions as tables of events and actions (two workers, statements of at most 3 requests): no
/// database, no task, no waiting.
@Suite("Delta batcher's state")
struct DeltaBatcherStateTests {
    @Test("a lone request wakes an idle worker at once; requests that find every worker busy wait, then go together")
    func batches() {
        var state = DeltaBatcherState(maxBatch: 3)
        #expect(state.workerReady(0) == .idle)
        #expect(state.workerReady(1) == .idle)
        // Alone: no waiting for company.
        #expect(state.request(1) == .wake(worker: 0, batch: [1]))
        #expect(state.request(2) == .wake(worker: 1, batch: [2]))
        // Both busy: queued, in arrival order.
        for id in 3...7 {
            let action = state.request(id)
            #expect(action == .queued)
        }
        #expect(state.waiting == 5)
        // The first worker free takes at most three, the next the rest.
        #expect(state.statementEnded([1]) == [1])
        #expect(state.workerReady(0) == .run([3, 4, 5]))
        #expect(state.statementEnded([2]) == [2])
        #expect(state.workerReady(1) == .run([6, 7]))
        #expect(state.workerReady(1) == .idle)
        #expect(state.statements == 4)
    }

    @Test("a cancelled request is answered once: at its cancellation, never again by its statement")
    func cancellation() {
        var state = DeltaBatcherState(maxBatch: 8)
        #expect(state.request(1) == .queued)
        #expect(state.request(2) == .queued)
        #expect(state.request(3) == .queued)
        // Cancelled while queued: out of the queue.
        #expect(state.cancel(2) == true)
        #expect(state.waiting == 2)
        #expect(state.workerReady(0) == .run([1, 3]))
        // Cancelled in a running statement: the statement runs on for the others.
        #expect(state.cancel(3) == true)
        #expect(state.statementEnded([1, 3]) == [1])
        // Answered already: a late cancellation answers nothing.
        #expect(state.cancel(1) == false)
    }

    @Test("stopping ends the idle workers and refuses the queued requests; a running statement still answers its own")
    func stop() {
        var state = DeltaBatcherState(maxBatch: 1)
        #expect(state.workerReady(0) == .idle)
        #expect(state.request(1) == .wake(worker: 0, batch: [1]))
        #expect(state.workerReady(1) == .idle)
        #expect(state.request(2) == .wake(worker: 1, batch: [2]))
        #expect(state.request(3) == .queued)
        #expect(state.statementEnded([2]) == [2])
        #expect(state.workerReady(1) == .run([3]))
        #expect(state.request(4) == .queued)
        let stopped = state.stop()
        #expect(stopped.workers == [] && stopped.refused == [4])
        #expect(state.statementEnded([1]) == [1])
        #expect(state.workerReady(0) == .stop)
        #expect(state.request(5) == .refuse)
    }
}
