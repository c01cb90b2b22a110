import Hummingbird
import NIOCore
import Prometheus
import SyncAPI

/// `GET /health`, `GET /ready`, `GET /metrics` and the server description `GET /api/v1/` (protocol §8).
struct OperationsRoutes {
    let store: any SyncStore
    let configuration: AppConfiguration
    let metrics: PrometheusCollectorRegistry

    func add(to router: Router<AppRequestContext>, api: RouterGroup<AppRequestContext>) {
        router.resource("health", [.get: { _, _ in HTTPBodies.response(json: #"{"status":"ok"}"#) }])
        router.resource(
            "ready",
            [
                .get: { _, _ in
                    try await store.ping()
                    return HTTPBodies.response(json: #"{"status":"ready"}"#)
                }
            ])
        router.resource(
            "metrics",
            [
                .get: { _, _ in
                    Response(
                        status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
                }
            ])
        let description = JSONWriter.encode(
            .object([
                ("version", .string(SyncAPIVersion.string)),
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
                ("signup", .bool(configuration.accounts.signupEnabled)),
                ("mediaMaxBytes", .number(Double(configuration.mediaMaxBytes))),
                ("mediaTypes", .array(MediaType.allCases.map { .string($0.rawValue) })),
            ]))
        api.resource("", [.get: { _, _ in HTTPBodies.response(json: description) }])
    }
}
