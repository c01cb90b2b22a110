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

    public init() {}
}
