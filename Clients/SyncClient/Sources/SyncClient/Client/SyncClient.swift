import Foundation
import GRDB

/// An exact offline replica of a signed-in family's data, kept in sync with a SyncAPI server (protocol.md).
///
/// Reads are local and instant. Saves and deletes apply locally at once and are pushed by themselves about a second
/// later (debounced; retried with backoff while the server is unreachable; `configuration.pushDelay`), and by every
/// `sync()`. `sync()` is one `POST /group` round trip whose answers are applied in one local transaction.
/// Thread-safe: share one instance per replica across the app.
public final class SyncClient: Sendable {
    public let configuration: SyncClientConfiguration
    /// The local database (read it, observe it; the SDK alone writes it).
    public let replica: Replica
    let statusCenter = StatusCenter()
    let flight = SingleFlight()
    /// The media downloads under way, one per medium.
    let mediaDownloads = MediaDownloads()
    /// The query indexes this client made (or found) in the replica, by name.
    let queryIndexes = Locked<Set<String>>([])
    let session: Locked<ClientSession?>
    let conflictHandlers = Locked<[SyncCollection: ConflictHandler]>([:])
    let liveTask = Locked<Task<Void, Never>?>(nil)
    /// Whether the app asked for live mode (it resumes by itself at the next sign-in).
    let liveWanted = Locked(false)
    /// Uploads waiting to leave and downloaded media, beside the replica.
    let mediaStore: MediaStore
    /// The debounced push after a local write (`schedulePush`), at most one waiting.
    let pushTask = Locked<Task<Void, Never>?>(nil)
    /// The server's model as last read (kept in the replica), and when this process last read it.
    let modelState: Locked<(model: ServerModel?, checked: ContinuousClock.Instant?)>
    /// The loggers of each subsystem (`SyncClientLog`).
    let log: ClientLoggers

    /// Opens (and migrates) the replica and loads the stored session, if any. No network.
    public init(configuration: SyncClientConfiguration) throws {
        try Self.checkScheme(configuration)
        self.configuration = configuration
        log = ClientLoggers(configuration.makeLogger)
        replica = try Replica(path: configuration.replicaPath)
        AnswerSpool.removeLeftovers(replicaPath: configuration.replicaPath)
        mediaStore = try MediaStore(replicaPath: configuration.replicaPath, limit: configuration.mediaCacheBytes)
        try configuration.fileProtection?.apply(to: ["", "-wal", "-shm", ".media", ".token"].map { configuration.replicaPath + $0 })
        let model = try replica.pool.read { db in try Replica.meta(db, MetaKey.model) }
        modelState = Locked((model.flatMap { try? JSONDecoder().decode(ServerModel.self, from: Data($0.utf8)) }, nil))
        let stored = try configuration.tokenStore.load()
        session = Locked(stored)
        statusCenter.update { $0.signedIn = stored != nil }
        try refreshCounts()
    }

    /// `https`, or `http` to this machine, unless `allowsInsecureHTTP`.
    static func checkScheme(_ configuration: SyncClientConfiguration) throws {
        let url = configuration.serverURL
        let loopback = ["127.0.0.1", "::1", "[::1]", "localhost"].contains(url.host?.lowercased() ?? "")
        switch url.scheme?.lowercased() {
        case "https": return
        case "http" where loopback || configuration.allowsInsecureHTTP: return
        case "http":
            throw SyncClientError.invalid("http://\(url.host ?? "") sends the token in clear: use https (or set allowsInsecureHTTP)")
        default: throw SyncClientError.invalid("the server URL must be https:// (or http:// to this machine): \(url)")
        }
    }

    /// Whether a session is stored (the token may still have expired on the server).
    public var isSignedIn: Bool { session.withLock { $0 != nil } }
    /// The current session: token, account and family ids.
    public var currentSession: ClientSession? { session.withLock { $0 } }
    /// The date of sync the replica is at (opaque; nil before the first sync).
    public var dateOfSync: String? { try? replica.pool.read { db in try Replica.meta(db, MetaKey.date) } }

    /// Erases the replica's data (items, queue, failed writes, date), keeping the session: the next sync downloads
    /// everything again.
    public func reset() async throws {
        try await flight.exclusive { try await self.eraseData() }
        try refreshCounts()
    }

    /// What `reset` erases, for a caller that already runs alone (inside the sync's flight).
    func eraseData() async throws {
        try await replica.pool.write { db in
            let account = try Replica.meta(db, MetaKey.account)
            try Replica.eraseData(db)
            try Self.eraseMedia(db, self.mediaStore)
            try Replica.setMeta(db, MetaKey.account, account)
        }
    }
}
