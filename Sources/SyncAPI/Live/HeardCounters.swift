import Synchronization

/// Each space's change counter as this instance last heard it, so that a delta whose date is at that counter is
/// answered "nothing changed" with no database read (issue 57: most syncs of a phone find nothing new).
///
/// Why that answer is exact (docs/decisions.md, "Deltas answered from what the hub heard"): an entry is always a value
/// the space's counter really had, on the history it names — a notice of a commit (the write path on SQLite, `NOTIFY`
/// on PostgreSQL), or a read of the primary that began while the notices flowed (`ticket`) — and every commit after it
/// raises it when its notice arrives (entries take the higher value on one history; another history replaces them).
/// So a date equal to an entry names a state the space was in, with no change since: the answer of that moment, as a
/// hot standby's is of the moment it replayed (protocol §13), never a hole, and never a move backwards (a date below or
/// above the entry reads the database). While notices may be missed (the PostgreSQL listener suspected, deaf or
/// reconnecting: `setLive(false)`), nothing is answered, and turning it back on starts empty; a failover replaces the
/// listener's connection, so no entry of the lost history survives it. A write this instance commits through the
/// engine drops its space's entry before it is answered (`moved`), so the writer's next delta on this instance sees its
/// write without waiting for the notice.
public final class HeardCounters: Sendable {
    private struct Entry {
        var version: Int64
        var history: String
    }

    private struct State {
        var live: Bool
        /// Moves whenever entries may have been missed or dropped: a read that began before it records nothing.
        var epoch: UInt64 = 0
        var entries: [String: Entry] = [:]
        var hits = 0
    }

    private let state: Mutex<State>
    let capacity: Int

    /// `live`: whether every commit's notice reaches this instance now (true for SQLite, whose write path is
    /// in-process). `capacity`: the spaces kept; past it the map starts over (a refill costs one read per space).
    public init(live: Bool, capacity: Int = 500_000) {
        state = Mutex(State(live: live))
        self.capacity = capacity
    }

    /// Notices flow (or may be missed from now on); either way the map starts empty.
    public func setLive(_ live: Bool) {
        state.withLock { state in
            state.live = live
            state.epoch &+= 1
            state.entries = [:]
        }
    }

    /// A notice: `space`'s counter reached `version` on `history` at a commit.
    public func heard(space: String, version: Int64, history: String) {
        state.withLock { state in take(space, version, history, in: &state) }
    }

    /// Where a read of the primary begins: pass it back to `read`. Nil while notices may be missed.
    public func ticket() -> UInt64? {
        state.withLock { $0.live ? $0.epoch : nil }
    }

    /// A read of the primary that began at `ticket` found `space`'s counter at `version` on `history`.
    public func read(space: String, version: Int64, history: String, ticket: UInt64) {
        state.withLock { state in
            guard state.live, state.epoch == ticket else { return }
            take(space, version, history, in: &state)
        }
    }

    /// This instance committed (or may have committed) a write of `space`: its entry goes until a notice or a read
    /// brings it back, and reads in flight record nothing (they may have begun before the write).
    public func moved(space: String) {
        state.withLock { state in
            state.epoch &+= 1
            state.entries[space] = nil
        }
    }

    /// Every entry may be behind (a commit whose notice could not be sent): start over.
    public func forgetAll() {
        state.withLock { state in
            state.epoch &+= 1
            state.entries = [:]
        }
    }

    /// Whether `space` is known to be at exactly `position` (its counter and history): then nothing changed since.
    public func isAt(space: String, _ position: DatePosition) -> Bool {
        state.withLock { state in
            guard state.live, let entry = state.entries[space], entry.version == position.version, entry.history == position.history
            else { return false }
            state.hits += 1
            return true
        }
    }

    /// Where `space`'s counter was last heard, while notices flow.
    public func position(space: String) -> DatePosition? {
        state.withLock { state in
            guard state.live, let entry = state.entries[space] else { return nil }
            return DatePosition(version: entry.version, history: entry.history)
        }
    }

    /// `count` answers were given from the map elsewhere (a group's run of reads).
    public func counted(_ count: Int) {
        state.withLock { $0.hits += count }
    }

    /// Deltas answered from the map since start (metrics, tests).
    public var hits: Int { state.withLock { $0.hits } }

    /// Spaces kept now.
    public var count: Int { state.withLock { $0.entries.count } }

    private func take(_ space: String, _ version: Int64, _ history: String, in state: inout State) {
        if let entry = state.entries[space], entry.history == history {
            if version > entry.version { state.entries[space]!.version = version }
            return
        }
        if state.entries.count >= capacity, state.entries[space] == nil {
            // Full: start over rather than track ages.
            state.epoch &+= 1
            state.entries = [:]
        }
        state.entries[space] = Entry(version: version, history: history)
    }
}
