import PostgresNIO
import SyncAPI
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
