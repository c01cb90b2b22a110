import SyncAPI
import Testing

/// The snapshot budget's decisions as tables of events and the actions they answer: no task, no timer, no waiting.
/// Each event carries its time (seconds here) and, for the pace, the bytes each holder delivered.
@Suite("Snapshot budget's state")
struct SnapshotBudgetStateTests {
    typealias State = SnapshotBudgetState

    /// One event and the action it must answer.
    enum Step {
        case lease(Int, String, String, at: Int, State.LeaseAction)
        case queue(Int, String, String, at: Int, delivered: [Int: Int], State.QueueAction)
        case track(Int)
        case expire(Int, Bool)
        case giveBack(Int, at: Int, State.GiveBackAction)
        case held(Int, waiting: Int, cuts: Int)
    }

    static func run(_ state: inout State, _ steps: [Step], sourceLocation: SourceLocation = #_sourceLocation) {
        for (n, step) in steps.enumerated() {
            switch step {
            case .lease(let id, let account, let family, let at, let expected):
                let action = state.lease(id, .init(account: account, family: family), at: .seconds(at))
                #expect(action == expected, "step \(n): lease \(id)", sourceLocation: sourceLocation)
            case .queue(let id, let account, let family, let at, let delivered, let expected):
                let action = state.queue(id, .init(account: account, family: family), at: .seconds(at)) { delivered[$0] ?? 0 }
                #expect(action == expected, "step \(n): queue \(id)", sourceLocation: sourceLocation)
            case .track(let id):
                state.track(id)
            case .expire(let id, let expected):
                #expect(state.expire(id) == expected, "step \(n): expire \(id)", sourceLocation: sourceLocation)
            case .giveBack(let id, let at, let expected):
                #expect(state.giveBack(id, at: .seconds(at)) == expected, "step \(n): give back \(id)", sourceLocation: sourceLocation)
            case .held(let held, let waiting, let cuts):
                #expect(
                    (state.held, state.waiting, state.cuts) == (held, waiting, cuts), "step \(n): held, waiting, cuts",
                    sourceLocation: sourceLocation)
            }
        }
    }

    static func state(perAccount: Int = 4, perFamily: Int = 4, perInstance: Int = 2, rate: Int = 1000, grace: Int = 10) -> State {
        State(perAccount: perAccount, perFamily: perFamily, perInstance: perInstance, pace: .init(minimumRate: rate, grace: .seconds(grace)))
    }

    @Test("an account's and a family's caps refuse at once; the instance's makes a lease wait")
    func caps() {
        var state = Self.state(perAccount: 2, perFamily: 3, perInstance: 4)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted),
                .lease(2, "a1", "A", at: 0, .granted),
                .lease(3, "a1", "A", at: 0, .refusedAccount),
                .lease(4, "a2", "A", at: 0, .granted),
                .lease(5, "a3", "A", at: 0, .refusedFamily),
                .lease(6, "b1", "B", at: 0, .granted),
                .held(4, waiting: 0, cuts: 0),
                // The instance is full: counted, told to wait, and queued.
                .lease(7, "c1", "C", at: 1, .mustWait),
                .queue(7, "c1", "C", at: 1, delivered: [:], .queued(cut: nil)),
                // A waiter counts for its account: a second of c1's waits, a third is refused at once.
                .lease(8, "c1", "C", at: 1, .mustWait),
                .lease(9, "c1", "C", at: 1, .refusedAccount),
            ])
    }

    @Test("a place given back goes to the first waiter; a waiter's expiry gives its counts back; a place freed with no one")
    func handOver() {
        var state = Self.state(perInstance: 1)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted),
                .lease(2, "b1", "B", at: 0, .mustWait),
                .queue(2, "b1", "B", at: 0, delivered: [:], .queued(cut: nil)),
                .lease(3, "c1", "C", at: 0, .mustWait),
                .queue(3, "c1", "C", at: 0, delivered: [:], .queued(cut: nil)),
                .giveBack(1, at: 1, .handOver(to: 2)),
                .held(1, waiting: 1, cuts: 0),
                .expire(3, true),
                .expire(3, false),
                .giveBack(2, at: 2, .freed),
                .giveBack(2, at: 2, .none),
                .held(0, waiting: 0, cuts: 0),
            ])
    }

    /// The race of 2026-11-26: a place given back between a lease's `mustWait` and its queueing was freed with no one
    /// to take it. Queued behind nobody, the waiter takes it.
    @Test("a place freed between the decision to wait and the queueing is taken by the queueing")
    func placeFreedBeforeQueueing() {
        var state = Self.state(perInstance: 1)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted),
                .lease(2, "b1", "B", at: 0, .mustWait),
                .giveBack(1, at: 0, .freed),
                .queue(2, "b1", "B", at: 0, delivered: [:], .granted),
                .held(1, waiting: 0, cuts: 0),
                // Behind a waiter, a newcomer waits even when a place is free: first come, first served.
                .lease(3, "c1", "C", at: 0, .mustWait),
                .queue(3, "c1", "C", at: 0, delivered: [:], .queued(cut: nil)),
            ])
    }

    @Test("a waiter cuts the slowest tracked holder past its grace and below the pace; one in its grace or at the pace keeps its place")
    func pace() {
        var state = Self.state(perInstance: 2, rate: 1000, grace: 10)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted), .track(1),
                .lease(2, "b1", "B", at: 0, .granted), .track(2),
                // At 5 s both are in their grace: nobody is cut.
                .lease(3, "c1", "C", at: 5, .mustWait),
                .queue(3, "c1", "C", at: 5, delivered: [1: 0, 2: 0], .queued(cut: nil)),
                // At 20 s, 1 read 30,000 B (1,500 B/s, at the pace) and 2 read 10,000 B (500 B/s): 2 is cut.
                .lease(4, "d1", "D", at: 20, .mustWait),
                .queue(4, "d1", "D", at: 20, delivered: [1: 30_000, 2: 10_000], .queued(cut: 2)),
                .held(2, waiting: 2, cuts: 1),
                // Cut once: not cut again by the next waiter, though still the slowest.
                .lease(5, "e1", "E", at: 21, .mustWait),
                .queue(5, "e1", "E", at: 21, delivered: [1: 30_000, 2: 10_000], .queued(cut: nil)),
                // Its cancellation gives the place back, to the first waiter.
                .giveBack(2, at: 21, .handOver(to: 3)),
            ])
    }

    @Test("an untracked holder is never cut, however slow")
    func untracked() {
        var state = Self.state(perInstance: 1, rate: 1000, grace: 0)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted),
                .lease(2, "b1", "B", at: 100, .mustWait),
                .queue(2, "b1", "B", at: 100, delivered: [1: 0], .queued(cut: nil)),
                .held(1, waiting: 1, cuts: 0),
            ])
    }

    /// Issue 53: two families at the pace held every place; a third family waited for nothing.
    @Test("a family with no place cuts the slowest holder of the family holding the most; a freed place goes to it first")
    func familyWithoutPlace() {
        var state = Self.state(perFamily: 4, perInstance: 3, rate: 1, grace: 10)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted), .track(1),
                .lease(2, "a2", "A", at: 0, .granted), .track(2),
                .lease(3, "b1", "B", at: 0, .granted), .track(3),
                // A waiter of B (which holds a place) cuts nobody: every holder keeps the pace.
                .lease(4, "b2", "B", at: 20, .mustWait),
                .queue(4, "b2", "B", at: 20, delivered: [1: 1_000_000, 2: 500_000, 3: 1_000], .queued(cut: nil)),
                // A waiter of C (which holds none) cuts A's slower holder: A holds the most places.
                .lease(5, "c1", "C", at: 20, .mustWait),
                .queue(5, "c1", "C", at: 20, delivered: [1: 1_000_000, 2: 500_000, 3: 1_000], .queued(cut: 2)),
                // The cut answer's place goes to C's waiter, queued after B's.
                .giveBack(2, at: 21, .handOver(to: 5)),
                .held(3, waiting: 1, cuts: 1),
            ])
    }

    @Test("a family holding one place is not cut for another family")
    func oneEach() {
        var state = Self.state(perInstance: 2, rate: 1, grace: 0)
        Self.run(
            &state,
            [
                .lease(1, "a1", "A", at: 0, .granted), .track(1),
                .lease(2, "b1", "B", at: 0, .granted), .track(2),
                .lease(3, "c1", "C", at: 5, .mustWait),
                .queue(3, "c1", "C", at: 5, delivered: [1: 100, 2: 100], .queued(cut: nil)),
            ])
    }
}
