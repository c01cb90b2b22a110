import Hummingbird
import NIOCore
import Prometheus
import SyncAPI
import SyncModelTools

/// `GET /health`, `GET /ready`, `GET /metrics` and the server description `GET /api/v1/` (protocol §8).
struct OperationsRoutes {
    let store: any SchemaStore
    /// The router of reads over hot standbys, when there are any (its counts are metrics).
    let readRoutes: ReadRouteCounts?
    let configuration: AppConfiguration
    let metrics: PrometheusCollectorRegistry
    let streams: LiveStreams
    let hub: ChangeHub?
    let snapshots: SnapshotBudget
    let fullLists: FullListCache
    /// Spaces' counters as the hub heard them (nil: no hub).
    var heard: HeardCounters? = nil
    let bodies: BodyBudget?

    func add(to router: Router<AppRequestContext>, api: RouterGroup<AppRequestContext>) {
        // Long-lived resources, read when scraped: each returns to zero when its clients are gone, whatever they did.
        func gauge(_ name: String, _ help: String) -> Gauge {
            metrics.makeGauge(descriptor: MetricNameDescriptor(namespace: "syncapi", metricName: name, unitName: "", helpText: help))
        }
        let openStreams = gauge("live_streams", "Open GET /changes streams.")
        let subscriptions = gauge("hub_subscriptions", "Streams subscribed to the change hub.")
        let answers = gauge("streamed_answers", "Answers streaming from a database snapshot.")
        let snapshotPlaces = gauge(
            "snapshot_answers", "Places taken in the budget of answers that hold a snapshot while their client downloads.")
        let snapshotCuts = gauge(
            "snapshot_answers_cut", "Answers cut since start for reading below the pace while another waited for a snapshot place.")
        let bodyBytes = gauge(
            "request_body_bytes", "Bytes of request bodies being read or held (their declared length, else their limit).")
        let keptLists = gauge("full_list_cache_bytes", "Bytes of full-list answers kept by date of sync.")
        let keptHits = gauge("full_list_cache_hits", "Full-list answers given from the cache since start, without reading their rows.")
        let heardHits = gauge("deltas_from_hub", "Deltas answered since start from the counters the change hub heard, without a read.")
        let readRoutes = self.readRoutes.map { ReadRouteMetrics(counts: $0, registry: metrics) }
        router.resource("health", [.get: { _, _ in HTTPBodies.response(json: #"{"status":"ok"}"#) }])
        let readiness = ReadinessProbe { try await store.ping() }
        router.resource(
            "ready",
            [
                .get: { _, _ in
                    guard await readiness.ready() else { throw SyncError.unavailable }
                    return HTTPBodies.response(json: #"{"status":"ready"}"#)
                }
            ])
        router.resource(
            "metrics",
            [
                .get: { _, _ in
                    openStreams.set(Double(streams.count))
                    subscriptions.set(Double(hub?.subscriptions ?? 0))
                    answers.set(Double(AnswerStream.open))
                    snapshotPlaces.set(Double(snapshots.count))
                    snapshotCuts.set(Double(snapshots.cutCount))
                    bodyBytes.set(Double(bodies?.inUse ?? 0))
                    keptLists.set(Double(fullLists.usage.bytes))
                    keptHits.set(Double(fullLists.hits))
                    heardHits.set(Double(heard?.hits ?? 0))
                    readRoutes?.update()
                    return Response(
                        status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
                }
            ])
        let description = JSONWriter.encode(
            .object([
                ("version", .string(SyncAPIVersion.string)),
                ("modelDigest", .string(configuration.model.digest)),
                (
                    "limits",
                    .object([
                        ("groupMaxRequests", .number(Double(configuration.groupMaxRequests))),
                        ("nbMax", .number(500)),
                        ("maxChildren", .number(100)),
                        ("bodyMaxBytes", .number(Double(configuration.bodyMaxBytes))),
                    ])
                ),
                ("tombstoneRetentionSeconds", .number(Double(configuration.tombstoneRetentionSeconds))),
                ("signup", .bool(configuration.accounts.signupEnabled && configuration.accounts.passwordsEnabled)),
                ("usernameLogin", .bool(configuration.accounts.passwordsEnabled)),
                ("identityProviders", .array((configuration.identity?.providers ?? []).map { .string($0.name) })),
                ("mediaMaxBytes", .number(Double(configuration.mediaMaxBytes))),
                ("mediaTypes", .array(MediaType.allCases.map { .string($0.rawValue) })),
                (
                    "quotas",
                    .object([
                        ("accountsPerFamily", .number(Double(configuration.accounts.maxAccountsPerFamily))),
                        ("itemsPerFamily", .number(Double(configuration.quotas.items))),
                        ("storedBytesPerFamily", .number(Double(configuration.quotas.storedBytes))),
                        ("mediaBytesPerFamily", .number(Double(configuration.quotas.mediaBytes))),
                    ])
                ),
            ]))
        api.resource("", [.get: { _, _ in HTTPBodies.response(json: description) }])
        // The model this server serves, normalized, with its digest (protocol §12); public, like the description.
        let model = JSONWriter.encode(configuration.model.normalized)
        api.resource("model", [.get: { _, _ in HTTPBodies.response(json: model) }])
        // Its OpenAPI document, generated from it (§12).
        let openAPI = JSONWriter.encode(configuration.model.openAPI(version: SyncAPIVersion.string))
        api.resource("openapi.json", [.get: { _, _ in HTTPBodies.response(json: openAPI) }])
    }
}
