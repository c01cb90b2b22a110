import Synchronization

/// How many snapshot reads of sync answers each place served (the `syncapi_read_transactions_total` metric): a
/// standby, the primary directly (no standby healthy, or a read that never goes to one), or the primary after a
/// standby could not answer exactly (lagging behind the client's date, or failing).
public final class ReadRouteCounts: Sendable {
    private let standbyReads = Atomic<Int>(0)
    private let primaryReads = Atomic<Int>(0)
    private let fallbackReads = Atomic<Int>(0)

    public init() {}

    /// Where one read was answered.
    public enum Route: String, Sendable, CaseIterable {
        case standby, primary, fallback
    }

    package func count(_ route: Route) {
        switch route {
        case .standby: standbyReads.add(1, ordering: .relaxed)
        case .primary: primaryReads.add(1, ordering: .relaxed)
        case .fallback: fallbackReads.add(1, ordering: .relaxed)
        }
    }

    /// Reads answered by that place since start.
    public func total(_ route: Route) -> Int {
        switch route {
        case .standby: standbyReads.load(ordering: .relaxed)
        case .primary: primaryReads.load(ordering: .relaxed)
        case .fallback: fallbackReads.load(ordering: .relaxed)
        }
    }
}
