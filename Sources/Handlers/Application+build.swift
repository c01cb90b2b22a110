import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import Prometheus
import SyncAPI
import SyncStorage
import Synchronization

/// Builds the whole server for a configuration: opens the store, migrates it before listening, wires the routes,
/// and chooses plain HTTP/1.1 or TLS (HTTP/2 by ALPN, HTTP/1.1 otherwise) with the connection limits of protocol §8.
public func buildApplication(_ configuration: AppConfiguration, logger: Logger) async throws -> some ApplicationProtocol {
    if configuration.databasePooler, configuration.listenDatabase == nil {
        throw DatabaseURLError(
            "--database-pooler needs --listen-database: LISTEN cannot go through a pooler in transaction mode; give a direct URL of the same database"
        )
    }
    // One timer wheel for every time limit of the application (requests, store calls, standbys, the listener).
    let timers = TimerWheel(resolution: .milliseconds(10))
    let opened = try OpenedStore.open(
        configuration.database, deadline: configuration.databaseDeadline, pooler: configuration.databasePooler,
        listen: configuration.listenDatabase, pool: configuration.databasePool, reads: configuration.readDatabases,
        readMaxLag: configuration.readMaxLag, timers: timers, logger: logger)
    let bodies = BodyBudget(
        limit: configuration.bodyMemoryBytes, perAddress: configuration.bodyMemoryPerAddressBytes, exempt: configuration.trustedProxies)
    let producers = AnswerProducers()
    let fileLimit = DescriptorBudget.currentLimit()
    let maxConnections = DescriptorBudget.connectionCeiling(configuration, limit: fileLimit)
    if maxConnections < configuration.maxConnections {
        logger.warning(
            "--max-connections lowered to what the open-file limit holds (raise it with ulimit -n or LimitNOFILE)",
            metadata: [
                "max-connections": "\(configuration.maxConnections)", "held": "\(maxConnections)", "open-file-limit": "\(fileLimit)",
            ])
    }
    let router = buildRouter(
        roles: opened.roles, reads: opened.reads, readRoutes: opened.readRoutes, producers: producers, timers: timers, media: opened.media,
        hub: opened.hub, bodies: bodies, configuration: configuration, logger: logger)
    var app = Application(
        responder: TimeLimitedResponder(
            inner: router.buildResponder(), limit: configuration.requestTimeLimit,
            policies: RoutePolicies(router: router, itemLimit: configuration.bodyMaxBytes),
            bodies: bodies, clientAddress: ClientAddressResolver(trustedProxies: configuration.trustedProxies), timers: timers),
        server: try serverBuilder(configuration),
        configuration: .init(
            address: .hostname(configuration.hostname, port: configuration.port), serverName: "SyncAPI",
            availableConnectionsDelegate: MaximumAvailableConnections(maxConnections)),
        logger: logger)
    if let client = opened.postgresClient { app.addServices(client) }
    if let client = opened.listenClient { app.addServices(client) }
    if let client = opened.snapshotClient { app.addServices(client) }
    if let listener = opened.listener { app.addServices(listener) }
    for client in opened.readClients { app.addServices(client) }
    // After the clients: shut down before them (a service group stops in reverse order), after the server.
    for service in opened.storeServices { app.addServices(service) }
    // After the stores' services: its producers end before the batchers and the clients they read through.
    app.addServices(producers)
    if let checker = opened.standbyChecker { app.addServices(checker) }
    app.addServices(
        TombstonePurger(
            store: opened.roles.purger, media: opened.media, retentionSeconds: configuration.tombstoneRetentionSeconds, logger: logger,
            clock: configuration.clock, timers: timers))
    app.beforeServerStarts {
        // A database that does not answer yet is waited for (up to `databaseStartWait`): instances and their database
        // restarted together must not race, and a process manager restarting a failed start would only load it more.
        let startBy = ContinuousClock.now + configuration.databaseStartWait
        while true {
            do {
                try await opened.roles.evolution.migrate()
                break
            } catch let error as SyncError where error.code == .unavailable && ContinuousClock.now < startBy {
                logger.warning("waiting for the database", metadata: ["database": "\(configuration.database)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
        // The model served is recorded; a breaking change stops the start, before anything changed (§12).
        let changes = try await ModelRecord.apply(
            configuration.model, to: opened.roles.evolution, acceptBreaking: configuration.acceptBreakingModelChanges)
        for change in changes { logger.notice("model change applied", metadata: ["change": "\(change)"]) }
        logger.info("database ready", metadata: ["database": "\(configuration.database)", "model": "\(configuration.model.name)"])
    }
    return app
}

/// Plain HTTP/1.1, or TLS 1.2+ with HTTP/2 offered by ALPN, each with read and idle timeouts.
func serverBuilder(_ configuration: AppConfiguration) throws -> HTTPServerBuilder {
    let headerTimeout = TimeAmount.nanoseconds(configuration.headerReadTimeout.wholeNanoseconds)
    let bodyTimeout = TimeAmount.nanoseconds(configuration.bodyReadTimeout.wholeNanoseconds)
    let counts = AddressConnectionCounts(limit: configuration.maxConnectionsPerAddress, exempt: configuration.trustedProxies)
    let maxBody = Int64(max(configuration.bodyMaxBytes, configuration.mediaMaxBytes))
    let http1 = HTTP1Channel.Configuration(
        additionalChannelHandlers: [
            AddressConnectionLimiter(counts: counts),
            RequestReadTimeoutHandler(headTimeout: headerTimeout, bodyTimeout: bodyTimeout, maxBodyBytes: maxBody),
        ],
        idleTimeout: .nanoseconds(configuration.idleTimeout.wholeNanoseconds))
    switch (configuration.tlsCertificatePath, configuration.tlsKeyPath) {
    case (nil, nil):
        return .http1(configuration: http1)
    case (let certificate?, let key?):
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.2: forward secrecy (ECDHE) and AEAD only, no static RSA, no CBC. TLS 1.3 suites are all of that kind.
        tls.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        let channel = HTTP2UpgradeChannel.Configuration(
            idleTimeout: configuration.idleTimeout, gracefulCloseTimeout: .seconds(2), streamConfiguration: http1)
        let (handshakeLimit, finalTLS) = (headerTimeout, tls)
        return HTTPServerBuilder { responder in
            HandshakeLimitedChannel(
                base: try HTTP2UpgradeChannel(tlsConfiguration: finalTLS, configuration: channel, responder: responder), limit: handshakeLimit)
        }
    default:
        throw TLSFilesError()
    }
}

/// `--tls-cert` and `--tls-key` go together.
public struct TLSFilesError: Error, CustomStringConvertible {
    public var description: String { "--tls-cert and --tls-key must be given together" }
}

/// Builds the router over a store's roles (`StoreRoles`: each consumer gets the part it calls): every endpoint of
/// docs/api/protocol.md, behind problem+json errors and authentication.
/// `readRoutes`: where the reads of `reads` were served, for the metrics (hot standbys only).
public func buildRouter(
    roles: StoreRoles, reads: (any ItemReads)? = nil, readRoutes: ReadRouteCounts? = nil, producers: AnswerProducers, timers: TimerWheel,
    media: (any MediaStore)? = nil,
    hub: ChangeHub? = nil,
    bodies: BodyBudget? = nil,
    configuration: AppConfiguration,
    logger: Logger = Logger(label: "syncapi")
) -> Router<
    AppRequestContext
> {
    let collections = CollectionRegistry(configuration.model)
    let engine = SyncEngine(
        store: roles.engine, reads: reads, producers: producers, now: configuration.clock, streamStartDeadline: configuration.databaseDeadline,
        quotas: configuration.quotas,
        snapshots: SnapshotBudget(
            perAccount: configuration.maxSnapshotAnswersPerAccount, perFamily: configuration.maxSnapshotAnswersPerFamily,
            perInstance: configuration.maxSnapshotAnswersPerInstance, pace: configuration.snapshotAnswerPace, timers: timers),
        collections: collections, timers: timers, fullLists: FullListCache(capacity: configuration.fullListCacheBytes),
        heard: hub?.counters, readsFromPrimary: readRoutes == nil)
    let streams = LiveStreams(perAccount: configuration.maxStreamsPerAccount, perInstance: configuration.maxStreamsPerInstance)
    let metrics = PrometheusCollectorRegistry()
    let lockedUsernames = metrics.makeCounter(
        descriptor: MetricNameDescriptor(
            namespace: "syncapi", metricName: "login_username_locked", unitName: "total",
            helpText: "Usernames whose failed logins from all addresses reached the limit (a visible attack)."))
    let hasher = BcryptPasswordHasher(cost: configuration.bcryptCost, maxPending: configuration.maxPendingHashes ?? 4 * System.coreCount)
    let accounts = AccountService(
        store: roles.accounts, hasher: hasher, settings: configuration.accounts, sessions: hub?.sessions, now: configuration.clock,
        onUsernameLocked: { name in
            logger.warning("login throttled for every address: many failures for one username", metadata: ["username_sha256": "\(name)"])
            lockedUsernames.increment()
        }, collections: collections, wakeStreams: { hub?.notify(family: $0) },
        identity: configuration.identity.map {
            IdentityVerifier(
                providers: $0, fetcher: configuration.keySetFetcher, minimumRefresh: configuration.keySetMinimumRefresh,
                events: .counting(in: metrics))
        })
    let router = Router(context: AppRequestContext.self)
    router.add(middleware: RequestMetricsMiddleware(registry: metrics))
    router.add(middleware: CompressionMiddleware())
    router.add(middleware: ProblemMiddleware(bodyMaxBytes: configuration.bodyMaxBytes))
    let reach = GroupReach()
    router.add(middleware: GroupReachMiddleware(reach: reach))
    let api = router.group("api/v1")
    OperationsRoutes(
        store: roles.operations, readRoutes: readRoutes, configuration: configuration, metrics: metrics, streams: streams, hub: hub,
        snapshots: engine.snapshots, fullLists: engine.fullLists, heard: engine.heard,
        bodies: bodies
    ).add(to: router, api: api)
    let accountRoutes = AccountRoutes(
        accounts: accounts, bodyMaxBytes: min(configuration.bodyMaxBytes, AccountRoutes.bodyMaxBytes),
        clientAddress: ClientAddressResolver(trustedProxies: configuration.trustedProxies),
        logins: AdmissionLimiter(rate: configuration.loginRate, now: configuration.clock),
        signups: AdmissionLimiter(rate: configuration.signupRate, now: configuration.clock))
    accountRoutes.addPublic(to: api)
    let authenticated = api.group().add(middleware: AuthMiddleware(accounts: accounts))
    accountRoutes.addAuthenticated(to: authenticated)
    // Every space-scoped route twice (protocol §15): unprefixed for the caller's home space, and under
    // `/spaces/{spaceId}` for any space the caller belongs to.
    let inSpace = api.group("spaces/:spaceId").add(middleware: AuthMiddleware(accounts: accounts)).add(
        middleware: SpaceMiddleware(accounts: accounts))
    let items = ItemRoutes(engine: engine, bodyMaxBytes: configuration.bodyMaxBytes)
    let spaceRoutes = SpaceRoutes(
        spaces: SpaceService(store: roles.spaces, accounts: accounts, collections: collections, limits: configuration.spaces),
        bodyMaxBytes: min(configuration.bodyMaxBytes, AccountRoutes.bodyMaxBytes),
        clientAddress: ClientAddressResolver(trustedProxies: configuration.trustedProxies),
        accepts: AdmissionLimiter(rate: configuration.loginRate, now: configuration.clock))
    spaceRoutes.add(to: authenticated)
    let memberItems = collections.writable.first { collection in
        guard collection.name == "members", collection.parentName == nil else { return false }
        if case .singleton = collection.kind { return false }
        return true
    }
    spaceRoutes.addPrefixed(to: inSpace, members: memberItems.map(items.handlers))
    items.add(to: authenticated)
    items.add(to: inSpace, except: memberItems.map { [$0.name] } ?? [])
    let changes = ChangesRoutes(
        feed: ChangeFeed(
            engine: engine, accounts: accounts, streams: streams, hub: hub,
            settings: .init(
                poll: configuration.changesPollInterval, recheck: configuration.changesRecheckInterval, ping: configuration.changesPingInterval,
                maxDuration: configuration.changesMaxDuration, startLimit: configuration.requestTimeLimit),
            timers: timers),
        timers: timers)
    let mediaRoutes = media.map {
        MediaRoutes(
            media: MediaService(
                store: $0, maxBytes: Int64(configuration.mediaMaxBytes), familyQuota: configuration.quotas.mediaBytes,
                clock: configuration.clock))
    }
    for group in [authenticated, inSpace] {
        SyncRoutes(engine: engine).add(to: group)
        changes.add(to: group)
        mediaRoutes?.add(to: group)
    }
    let responder = ResponderBox()
    GroupRoutes(
        engine: engine, bodyMaxBytes: configuration.bodyMaxBytes, maxRequests: configuration.groupMaxRequests,
        answerLimit: configuration.requestTimeLimit, responder: responder
    )
    .add(to: authenticated)
    // The routes a group's sub-request may reach (protocol §6): every route of the API but the group itself and the
    // change stream, which never ends.
    reach.allow(
        router.routes.map(\.path.description).filter { ($0 == "/api/v1" || $0.hasPrefix("/api/v1/")) && !GroupReach.refused.contains($0) })
    responder.value.withLock { $0 = router.buildResponder() }
    return router
}
