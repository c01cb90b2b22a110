import Foundation
import Logging

/// Where the server is and where the replica lives, plus the parts an app or a test may replace (transport, token
/// storage, retry timing, page sizes).
public struct SyncClientConfiguration: Sendable {
    /// The server's base URL (`https://api.example.com`); the SDK adds `/api/v1`.
    public var serverURL: URL
    /// The SQLite file of the replica. An app that shares its data with its extensions puts it in its App Group's
    /// container (`FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)`), with a
    /// `KeychainTokenStore` of the group's `accessGroup`.
    public var replicaPath: String
    /// Where the session's token is kept. Default: a 0600 file next to the replica (`<replicaPath>.token`); apps on
    /// Apple platforms should set `KeychainTokenStore`.
    public var tokenStore: any TokenStore
    /// How HTTP calls are made. Default: `URLSessionTransport`.
    public var transport: any HTTPTransport
    /// Backoff for network errors, 429 and 503.
    public var retryPolicy = RetryPolicy()
    /// Items per page of threads and wall posts (bounded by the server's `nbMax`).
    public var pageSize = 50
    /// Children carried per thread or post (bounded by the server's `maxChildren`).
    public var maxChildren = 10
    /// How long live mode waits after a notice before it syncs (notices in a burst make one sync).
    public var liveDebounce: Duration = .milliseconds(200)
    /// Longest wait between two live reconnections.
    public var liveMaximumBackoff: Duration = .seconds(30)
    /// How long after a local write its push starts (writes in a burst go together); nil: writes wait for `sync()`
    /// or `push()`. While the server is unreachable the push is retried with backoff, up to `liveMaximumBackoff`
    /// between attempts, until the queue is empty.
    public var pushDelay: Duration? = .seconds(1)
    /// Allows `http://` to a host other than this machine (`127.0.0.1`, `::1`, `localhost`): off by default, since a
    /// token and the family's data would cross the network in clear.
    public var allowsInsecureHTTP = false
    /// Most bytes of downloaded media kept beside the replica (least recently used out first); uploads waiting to
    /// leave are kept whatever their size.
    public var mediaCacheBytes = 200 * 1024 * 1024
    /// Largest medium uploaded or downloaded (the server's default `mediaMaxBytes`, 20 MiB): a download that goes past
    /// it is stopped and its bytes deleted, so an answer that never ends cannot fill the device.
    public var mediaMaxBytes = 20 * 1024 * 1024
    /// Most bytes of one answer the SDK holds in memory: a whole answer (every call but a sync's full lists, which are
    /// stored item by item as they arrive, however long), and any one value inside a sync's answer (an item, a page of
    /// a paginated list, a bundle). A larger one is not read further and fails with `answer_too_large`, so a broken or
    /// hostile server cannot fill the device's memory. Media have their own limit (`mediaMaxBytes`).
    public var answerMaxBytes = 64 * 1024 * 1024
    /// Most bytes of one sync's answer, downloaded to a file beside the replica before it is applied (so that the
    /// replica's writer is not held while it downloads): a larger one fails with `answer_too_large`, so a broken or
    /// hostile server cannot fill the device's storage. 1 GiB holds a first sync of several million items.
    public var syncAnswerMaxBytes = 1024 * 1024 * 1024
    /// A sync's answer that reaches this many bytes is read while it downloads, on a thread of its own (its replaced
    /// lists staged beside the replica); a shorter one is read by the apply once it is whole. Tests lower it.
    var syncStagingThreshold = 1 << 20
    /// The data model the app was built with (its generated `ServerModel`, e.g. `.family`): used for local writes
    /// only until the SDK has read the server's (`GET /api/v1/model`, at sign-in and at sync). Optional: an app that
    /// handles collections by name leaves it nil.
    public var model: ServerModel?
    /// How often a sync reads the server's model again (a server can add collections live); it is also read at sign-in
    /// and at the first sync of each launch.
    public var modelCheckInterval: Duration = .seconds(3600)
    /// The space this client's replica holds (protocol §15): nil for the account's home space (the unprefixed paths),
    /// else a space id from `spaces()`. One replica holds one space: `client(forSpace:replicaPath:)` opens another.
    public var space: String?
    /// The iOS Data Protection class of the replica's files, set when the client opens them; nil leaves the app's
    /// default. No effect off iOS.
    public var fileProtection: ReplicaFileProtection?
    /// How long a conflict handler may take (it may ask the user); past it the server's values of the fields both
    /// sides changed are kept, and the push goes on.
    public var conflictHandlerTimeout: Duration = .seconds(30)
    /// Makes the client's logger of each subsystem (`SyncClientLog`'s labels): by default swift-log's, which go where
    /// the app bootstrapped `LoggingSystem` (nowhere but the standard error until it does; on Apple platforms
    /// `UnifiedLogHandler` writes to the unified log). Give a handler of its own here to keep the SDK's logs apart.
    public var makeLogger: @Sendable (_ label: String) -> Logger = { Logger(label: $0) }

    public init(serverURL: URL, replicaPath: String) {
        self.serverURL = serverURL
        self.replicaPath = replicaPath
        tokenStore = FileTokenStore(path: replicaPath + ".token")
        transport = URLSessionTransport()
    }
}
