/// The snapshot budget's decisions as a value (`SnapshotBudget` carries out its actions): who gets a place, who waits,
/// who is refused, whose answer is cut, and who takes a place given back.
///
/// No clock is read and no continuation or timer is held here: each event carries its time (`at`, the application's
/// clock, `TimerWheel.now`) and, where the pace is judged, the bytes each holder has delivered. So every transition is
/// a line of a table in its test, with no task and no waiting.
public struct SnapshotBudgetState: Sendable {
    /// Whose answer a place or a waiter is.
    public struct Owner: Hashable, Sendable {
        public let account: String
        public let family: String

        public init(account: String, family: String) {
            self.account = account
            self.family = family
        }
    }

    /// What a lease asked for is answered.
    public enum LeaseAction: Equatable, Sendable {
        /// The place is taken: the answer may go.
        case granted
        /// The account holds or waits for `perAccount` answers already: 429 at once.
        case refusedAccount
        /// The family holds or waits for `perFamily` answers already: 429 at once.
        case refusedFamily
        /// Every place is held (or others wait before it): the lease is counted, and must `queue`.
        case mustWait
    }

    /// What queueing a waiter is answered.
    public enum QueueAction: Equatable, Sendable {
        /// A place was given back since `lease` answered `mustWait`, with no one queued to take it: taken now.
        case granted
        /// Queued; `cut`: the holder whose answer is cut now for this waiter (its cancellation gives its place back).
        case queued(cut: Int?)
    }

    /// What a place given back is answered.
    public enum GiveBackAction: Equatable, Sendable {
        /// The place goes to this waiter, which may go now.
        case handOver(to: Int)
        /// No one waits: the place is free.
        case freed
        /// The place was not held (given back before, or never granted).
        case none
    }

    struct Holder: Sendable {
        let owner: Owner
        let since: Duration
        /// Whether its answer reports its pace and can be cut (`track`); cut already: false.
        var cuttable = false
    }

    let perAccount: Int
    let perFamily: Int
    let perInstance: Int
    let pace: SnapshotBudget.Pace
    private(set) var total = 0
    private var byAccount: [String: Int] = [:]
    private var byFamily: [String: Int] = [:]
    private(set) var holders: [Int: Holder] = [:]
    private(set) var waiters: [(id: Int, owner: Owner)] = []
    /// Answers cut so far for a waiter.
    public private(set) var cuts = 0

    public init(perAccount: Int, perFamily: Int, perInstance: Int, pace: SnapshotBudget.Pace) {
        self.perAccount = perAccount
        self.perFamily = perFamily
        self.perInstance = perInstance
        self.pace = pace
    }

    /// Places held now.
    public var held: Int { total }
    /// Waiters queued now.
    public var waiting: Int { waiters.count }

    /// An answer of `owner` asks for place `id` (a new id each time).
    public mutating func lease(_ id: Int, _ owner: Owner, at now: Duration) -> LeaseAction {
        guard byAccount[owner.account, default: 0] < perAccount else { return .refusedAccount }
        guard byFamily[owner.family, default: 0] < perFamily else { return .refusedFamily }
        // Counted for the account and family at once (a waiting answer is one of theirs too).
        byAccount[owner.account, default: 0] += 1
        byFamily[owner.family, default: 0] += 1
        if total < perInstance && waiters.isEmpty {
            total += 1
            holders[id] = Holder(owner: owner, since: now)
            return .granted
        }
        return .mustWait
    }

    /// Queues lease `id`, which was answered `mustWait`. Decided again with the queue: a place given back since, while
    /// no one was queued, was freed rather than handed over, and a waiter queued behind nobody takes it now (otherwise
    /// every newcomer would queue behind a waiter no holder is left to serve). When it must wait, the slowest holder
    /// below the pace is cut for it, else, when its family holds no place, the slowest holder (past its grace) of the
    /// family holding the most, two at least. `delivered`: the bytes a holder's answer has delivered so far.
    public mutating func queue(_ id: Int, _ owner: Owner, at now: Duration, delivered: (Int) -> Int) -> QueueAction {
        if total < perInstance && waiters.isEmpty {
            total += 1
            holders[id] = Holder(owner: owner, since: now)
            return .granted
        }
        waiters.append((id, owner))
        let cut = slowest(at: now, delivered: delivered) ?? largestFamilysSlowest(for: owner, at: now, delivered: delivered)
        if let cut {
            cuts += 1
            holders[cut]?.cuttable = false
        }
        return .queued(cut: cut)
    }

    /// The answer holding place `id` reports its pace from now on, and may be cut.
    public mutating func track(_ id: Int) {
        holders[id]?.cuttable = true
    }

    /// Waiter `id`'s wait is over: true when it was still waiting (it is refused, its counts given back).
    public mutating func expire(_ id: Int) -> Bool {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
        uncount(waiters.remove(at: index).owner)
        return true
    }

    /// Place `id` is given back: to the first waiter of a family holding no place, else to the first waiter, else freed.
    public mutating func giveBack(_ id: Int, at now: Duration) -> GiveBackAction {
        guard let holder = holders.removeValue(forKey: id) else { return .none }
        uncount(holder.owner)
        if waiters.isEmpty {
            total -= 1
            return .freed
        }
        let held = heldByFamily()
        let index = waiters.firstIndex { held[$0.owner.family, default: 0] == 0 } ?? 0
        let next = waiters.remove(at: index)
        holders[next.id] = Holder(owner: next.owner, since: now)
        return .handOver(to: next.id)
    }

    /// A holder's average rate over its hold, bytes a second.
    private func rate(_ holder: Holder, _ id: Int, at now: Duration, delivered: (Int) -> Int) -> Double {
        Double(delivered(id)) / max((now - holder.since) / .seconds(1), 1e-3)
    }

    /// The slowest cuttable holder past its grace and below the pace.
    private func slowest(at now: Duration, delivered: (Int) -> Int) -> Int? {
        var slowest: (id: Int, rate: Double)?
        for (id, holder) in holders where holder.cuttable && now - holder.since >= pace.grace {
            let rate = rate(holder, id, at: now, delivered: delivered)
            guard rate < Double(pace.minimumRate) else { continue }
            if slowest == nil || rate < slowest!.rate || (rate == slowest!.rate && id < slowest!.id) { slowest = (id, rate) }
        }
        return slowest?.id
    }

    /// When `waiter`'s family holds no place: the cuttable holder past its grace of the family holding the most places
    /// (two at least), the slowest of it.
    private func largestFamilysSlowest(for waiter: Owner, at now: Duration, delivered: (Int) -> Int) -> Int? {
        let held = heldByFamily()
        guard held[waiter.family, default: 0] == 0 else { return nil }
        var chosen: (id: Int, places: Int, rate: Double)?
        for (id, holder) in holders where holder.cuttable && now - holder.since >= pace.grace {
            let places = held[holder.owner.family, default: 0]
            guard places >= 2 else { continue }
            let rate = rate(holder, id, at: now, delivered: delivered)
            if let best = chosen {
                guard places > best.places || (places == best.places && (rate < best.rate || (rate == best.rate && id < best.id))) else {
                    continue
                }
            }
            chosen = (id, places, rate)
        }
        return chosen?.id
    }

    /// The places each family holds now (waiters not counted).
    private func heldByFamily() -> [String: Int] {
        holders.values.reduce(into: [:]) { $0[$1.owner.family, default: 0] += 1 }
    }

    private mutating func uncount(_ owner: Owner) {
        let left = byAccount[owner.account, default: 1] - 1
        byAccount[owner.account] = left > 0 ? left : nil
        let familyLeft = byFamily[owner.family, default: 1] - 1
        byFamily[owner.family] = familyLeft > 0 ? familyLeft : nil
    }
}
