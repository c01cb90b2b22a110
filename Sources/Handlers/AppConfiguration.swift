import SyncAPI

/// Everything an operator can set, gathered by the executable from flags, environment and defaults.
public struct AppConfiguration: Sendable {
    public var hostname = "127.0.0.1"
    public var port = 8080
    public var database = DatabaseURL.sqlite(path: "data/syncapi.sqlite")
    /// `database` is a connection pooler in transaction mode (PgBouncer): no named prepared statements, and `LISTEN`
    /// on `listenDatabase`, a direct URL of the same database (required then).
    public var databasePooler = false
    /// The PostgreSQL pools: `serve`'s, whatever builds the application (tests too).
    public var databasePool = PoolSize()
    public var listenDatabase: DatabaseURL?
    /// PostgreSQL hot standbys of `database` (protocol §13): deltas and page syncs are read there when a standby has
    /// replayed the state the request names, else on the primary.
    public var readDatabases: [DatabaseURL] = []
    /// A standby lagging more than this is left out of reads until it catches up.
    public var readMaxLag = Duration.seconds(5)
    /// Largest accepted request body, in bytes (protocol §2: default 1 MiB).
    public var bodyMaxBytes = 1 << 20
    /// Bytes of request bodies (items, groups, accounts) read or held at once by this instance; past it 503 at once.
    public var bodyMemoryBytes = 128 << 20
    /// The share of `bodyMemoryBytes` one client address may hold; past it 429 at once (a lone body always fits).
    public var bodyMemoryPerAddressBytes = 16 << 20
    /// Largest medium `POST /media` takes, in bytes (protocol §10: default 20 MiB).
    public var mediaMaxBytes = 20 << 20
    /// Most sub-requests in one `POST /group`.
    public var groupMaxRequests = 20
    /// bcrypt cost of password hashes.
    public var bcryptCost: UInt8 = 12
    /// How long tombstones are kept before a purge (protocol §8).
    public var tombstoneRetentionSeconds = 30 * 86_400
    public var accounts = AccountService.Settings()
    /// The wall clock in milliseconds since 1970 that items, tokens, throttles and purges read (a test moves it).
    public var clock: @Sendable () -> Int64 = WallClock.nowMs
    /// The data model served (protocol §12): the family app's by default (`models/family.json`).
    public var model: DataModel = Collections.model
    /// Serve a model whose changes from the one the database served are breaking (then every client reloads).
    public var acceptBreakingModelChanges = false
    /// What one family may keep (protocol §8): items, stored bytes, media bytes (accounts: `accounts`).
    public var quotas = FamilyQuotas()
    /// How many spaces one account may own and belong to (protocol §15).
    public var spaces = SpaceLimits()
    /// The identity providers `POST /token` trusts (`--identity FILE`, protocol §14); nil: none.
    public var identity: IdentityProviders?
    /// How a provider's key set is read (tests serve their own).
    public var keySetFetcher = KeySetFetcher.standard
    /// The least time between two reads of one provider's key set, whatever tokens arrive (protocol §14: 30 s).
    public var keySetMinimumRefresh = Duration.seconds(30)
    /// `GET /changes` without a change hub (a bare router): how often a stream reads the family's counter.
    public var changesPollInterval = Duration.seconds(1)
    /// `GET /changes` with a hub: how often an idle stream re-checks its token anyway (token expiry), and its counter
    /// too while the listener may be deaf (a notice lost with its connection). Writes and revocations wake streams at
    /// once.
    public var changesRecheckInterval = Duration.seconds(30)
    /// `GET /changes`: a comment line at least this often, so proxies keep the connection.
    public var changesPingInterval = Duration.seconds(20)
    /// `GET /changes`: a stream ends after this long; the client reconnects with its last date.
    public var changesMaxDuration = Duration.seconds(300)
    /// `GET /changes`: most open streams of one account, and of this instance (over it: 429).
    public var maxStreamsPerAccount = 8
    public var maxStreamsPerInstance = 10_000
    /// Most answers holding a database snapshot while their client downloads them (streamed full lists, groups of
    /// reads), per account and per instance; past either, 429. The instance's stays below PostgreSQL's pool of 20.
    public var maxSnapshotAnswersPerAccount = 4
    public var maxSnapshotAnswersPerInstance = 8
    /// Most of them per family (nil: half the instance's, at least the account's), so other families find a place.
    public var maxSnapshotAnswersPerFamily: Int?
    /// The pace below which such an answer gives its place up to one that waits (`SnapshotBudget.Pace`).
    public var snapshotAnswerPace = SnapshotBudget.Pace()
    /// The bytes of full-list answers kept by date (`FullListCache`; 0: none).
    public var fullListCacheBytes = FullListCache.defaultCapacity

    /// TLS: PEM certificate chain and private key files; both or neither (then plain HTTP for a proxy in front).
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// Peers whose `X-Forwarded-For` is believed (protocol §1).
    public var trustedProxies: Set<String> = []
    /// Every request is answered within this (a 503 `unavailable` past it), whatever the database does.
    public var requestTimeLimit = Duration.seconds(15)
    /// How long a store call may wait for the database before answering 503.
    public var databaseDeadline = Duration.seconds(10)
    /// How long `serve` waits at start for a database that does not answer yet (a PostgreSQL still starting, or
    /// restarting at the same time as the instances), trying again every second, before it exits with the reason.
    public var databaseStartWait = Duration.seconds(60)
    /// A first request head must arrive within this, and a body may not stall longer than `bodyReadTimeout` between
    /// two pieces, or the connection closes.
    public var headerReadTimeout = Duration.seconds(10)
    public var bodyReadTimeout = Duration.seconds(30)
    /// On SIGTERM, how long the requests in flight (a slow upload, a long download) may take to finish; past it they
    /// are cancelled and the process exits.
    public var shutdownGrace = Duration.seconds(30)
    /// An idle keep-alive connection is closed after this.
    public var idleTimeout = Duration.seconds(60)
    /// Most open connections; past it new ones wait in the listen backlog until one closes.
    public var maxConnections = 10_000
    /// Most open connections (HTTP/2: streams) of one client address, IPv6 by /64; past it a new one is closed at once.
    /// Peers named in `trustedProxies` are exempt.
    public var maxConnectionsPerAddress = 256
    /// Most password hashes queued or running; past it, account calls answer 503 at once (nil: 4 per core).
    public var maxPendingHashes: Int?
    /// Per client address (IPv6 by /64), in memory, before any database write or hash (protocol §8): `POST /login`
    /// and `POST /password`, and, separately, `POST /signup` and `POST /accounts`. Past it: 429 with `Retry-After`.
    public var loginRate = AdmissionLimiter.Rate(burst: 30, perMinute: 20)
    public var signupRate = AdmissionLimiter.Rate(burst: 10, perMinute: 10)

    public init() {}
}
