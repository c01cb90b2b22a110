import Prometheus
import SyncAPI
import Synchronization

/// `syncapi_read_transactions_total{served_by}` (protocol §13): sync reads answered by a standby, by the primary
/// directly, and by the primary after a standby could not answer exactly (`fallback`), so an operator sees the share.
/// The store counts; the counters catch up with it when scraped.
final class ReadRouteMetrics: Sendable {
    private let counts: ReadRouteCounts
    private let counters: [(ReadRouteCounts.Route, Counter)]
    private let reported = Mutex<[ReadRouteCounts.Route: Int]>([:])

    init(counts: ReadRouteCounts, registry: PrometheusCollectorRegistry) {
        self.counts = counts
        let descriptor = MetricNameDescriptor(
            namespace: "syncapi", metricName: "read_transactions", unitName: "total",
            helpText: "Sync reads by where they were answered: a standby, the primary, or the primary after a standby (fallback).")
        counters = ReadRouteCounts.Route.allCases.map { ($0, registry.makeCounter(descriptor: descriptor, labels: [("served_by", $0.rawValue)])) }
    }

    /// Brings the counters up to the store's counts.
    func update() {
        reported.withLock { reported in
            for (route, counter) in counters {
                let total = counts.total(route)
                let step = total - reported[route, default: 0]
                if step > 0 { counter.increment(by: Int64(step)) }
                reported[route] = total
            }
        }
    }
}
