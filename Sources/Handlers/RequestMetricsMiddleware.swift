import Hummingbird
import Prometheus
import Synchronization

/// Counts requests and times them per route and status for `GET /metrics` (protocol §8), in a registry of the
/// application's own (no process-wide state, so several applications can live in one process, as in the tests).
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let registry: PrometheusCollectorRegistry
    /// The series already made, by route: the registry's `make…` builds the metric's name and checks its labels on
    /// every call; a lookup here is one hash.
    private let series = SeriesCache()

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    private final class SeriesCache: Sendable {
        let made = Mutex<[SeriesKey: Series]>([:])
    }

    private struct SeriesKey: Hashable {
        let method: String
        let route: String
        let status: Int
    }

    private struct Series: Sendable {
        let requests: Counter
        let duration: DurationHistogram
    }

    static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "syncapi", metricName: "http_requests", unitName: "total", helpText: "HTTP requests answered, by route and status.")
    }
    static var duration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "syncapi", metricName: "http_request_duration", unitName: "seconds",
            helpText: "Time to answer HTTP requests, by route.")
    }
    static let buckets: [Duration] = [.milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(2)]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        // The route pattern, not the path: ids must not multiply the series.
        let key = SeriesKey(method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: response.status.code)
        let metrics = series.made.withLock { $0[key] } ?? make(key)
        metrics.requests.increment()
        metrics.duration.record(ContinuousClock.now - start)
        return response
    }

    private func make(_ key: SeriesKey) -> Series {
        let made = Series(
            requests: registry.makeCounter(
                descriptor: Self.requests, labels: [("method", key.method), ("route", key.route), ("status", String(key.status))]),
            duration: registry.makeDurationHistogram(
                descriptor: Self.duration, labels: [("method", key.method), ("route", key.route)], buckets: Self.buckets))
        series.made.withLock { $0[key] = made }
        return made
    }
}
