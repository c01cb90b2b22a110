import PostgresNIO
import Synchronization

/// One PostgreSQL hot standby named by `--read-database` (protocol §13): its store, and whether reads may go to it.
///
/// It starts left out; `StandbyHealthChecker` lets it in once it answers, is in recovery and lags less than the bound,
/// and a read that fails on it leaves it out again until a later check finds it healthy.
public final class Standby: Sendable {
    /// The standby's store: its pooled client must run in the application's service group.
    public let store: PostgresStore
    /// A name for logs (host and port, never a password).
    public let name: String
    private let healthy = Atomic<Bool>(false)

    public init(store: PostgresStore, name: String) {
        self.store = store
        self.name = name
    }

    /// Whether reads may go to this standby now.
    public var isHealthy: Bool { healthy.load(ordering: .relaxed) }

    /// Lets the standby in or leaves it out; true when that changed its state.
    @discardableResult
    public func setHealthy(_ value: Bool) -> Bool {
        healthy.exchange(value, ordering: .relaxed) != value
    }
}

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

    func count(_ route: Route) {
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
