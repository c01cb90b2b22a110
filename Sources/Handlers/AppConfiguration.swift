import SyncAPI

/// Everything an operator can set, gathered by the executable from flags, environment and defaults.
public struct AppConfiguration: Sendable {
    public var hostname = "127.0.0.1"
    public var port = 8080
    public var database = DatabaseURL.sqlite(path: "data/syncapi.sqlite")
    /// Largest accepted request body, in bytes (protocol §2: default 1 MiB).
    public var bodyMaxBytes = 1 << 20
    /// Most sub-requests in one `POST /group`.
    public var groupMaxRequests = 20
    /// bcrypt cost of password hashes.
    public var bcryptCost: UInt8 = 12
    /// How long tombstones are kept before a purge (protocol §8).
    public var tombstoneRetentionSeconds = 30 * 86_400
    public var accounts = AccountService.Settings()
    /// `GET /changes`: how often a stream checks the family's counter (any instance's writes show up here).
    public var changesPollInterval = Duration.seconds(1)
    /// `GET /changes`: a comment line at least this often, so proxies keep the connection.
    public var changesPingInterval = Duration.seconds(20)
    /// `GET /changes`: a stream ends after this long; the client reconnects with its last date.
    public var changesMaxDuration = Duration.seconds(300)

    public init() {}
}
