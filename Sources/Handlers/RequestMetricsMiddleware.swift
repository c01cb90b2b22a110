import Hummingbird
import Prometheus

/// Counts requests and times them per route and status for `GET /metrics` (protocol §8), in a registry of the
/// application's own (no process-wide state, so several applications can live in one process, as in the tests).
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let registry: PrometheusCollectorRegistry

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
        let route = context.endpointPath ?? "unmatched"
        let method = request.method.rawValue
        registry.makeCounter(
            descriptor: Self.requests, labels: [("method", method), ("route", route), ("status", String(response.status.code))]
        ).increment()
        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("method", method), ("route", route)], buckets: Self.buckets)
            .record(ContinuousClock.now - start)
        return response
    }
}
