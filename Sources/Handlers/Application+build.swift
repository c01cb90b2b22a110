import Hummingbird
import Logging
import Prometheus
import SyncAPI
import Synchronization

/// The request context every route uses.
public typealias AppContext = AppRequestContext

/// Builds the whole server for a configuration: opens the store, migrates it before listening, wires the routes.
public func buildApplication(_ configuration: AppConfiguration, logger: Logger) async throws -> some ApplicationProtocol {
    let opened = try OpenedStore.open(configuration.database, logger: logger)
    let router = buildRouter(store: opened.store, configuration: configuration)
    var app = Application(
        router: router,
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: "SyncAPI"),
        logger: logger)
    if let client = opened.postgresClient { app.addServices(client) }
    app.addServices(TombstonePurger(store: opened.store, retentionSeconds: configuration.tombstoneRetentionSeconds, logger: logger))
    app.beforeServerStarts {
        try await opened.store.migrate()
        logger.info("database ready", metadata: ["database": "\(configuration.database)"])
    }
    return app
}

/// Builds the router over a store: every endpoint of protocol.md, behind problem+json errors and authentication.
public func buildRouter(store: any SyncStore, configuration: AppConfiguration) -> Router<AppRequestContext> {
    let engine = SyncEngine(store: store)
    let accounts = AccountService(
        store: store, hasher: BcryptPasswordHasher(cost: configuration.bcryptCost), settings: configuration.accounts)
    let router = Router(context: AppRequestContext.self)
    let metrics = PrometheusCollectorRegistry()
    router.add(middleware: RequestMetricsMiddleware(registry: metrics))
    router.add(middleware: CompressionMiddleware())
    router.add(middleware: ProblemMiddleware(bodyMaxBytes: configuration.bodyMaxBytes))
    let api = router.group("api/v1")
    OperationsRoutes(store: store, configuration: configuration, metrics: metrics).add(to: router, api: api)
    let accountRoutes = AccountRoutes(accounts: accounts, bodyMaxBytes: configuration.bodyMaxBytes)
    accountRoutes.addPublic(to: api)
    let authenticated = api.group().add(middleware: AuthMiddleware(accounts: accounts))
    accountRoutes.addAuthenticated(to: authenticated)
    ItemRoutes(engine: engine, bodyMaxBytes: configuration.bodyMaxBytes).add(to: authenticated)
    SyncRoutes(engine: engine).add(to: authenticated)
    ChangesRoutes(engine: engine, configuration: configuration).add(to: authenticated)
    let responder = ResponderBox()
    GroupRoutes(store: store, bodyMaxBytes: configuration.bodyMaxBytes, maxRequests: configuration.groupMaxRequests, responder: responder)
        .add(to: authenticated)
    responder.value.withLock { $0 = router.buildResponder() }
    return router
}
