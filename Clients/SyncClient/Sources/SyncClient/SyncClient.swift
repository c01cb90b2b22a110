import Foundation
import GRDB

/// Where the server is and where the replica lives, plus the parts an app may replace (transport, token storage,
/// retry timing).
public struct SyncClientConfiguration: Sendable {
    /// The server's base URL (`https://api.example.com`); the SDK adds `/api/v1`.
    public var serverURL: URL
    public var replicaPath: String
    public var tokenStore: any TokenStore
    public var transport: any HTTPTransport
    public var retryPolicy = RetryPolicy()
    /// Items per page of threads and wall posts, and children carried per parent.
    public var pageSize = 50
    public var maxChildren = 10
    /// How long live mode waits after a notice before it syncs (notices in a burst make one sync).
    public var liveDebounce: Duration = .milliseconds(200)

    public init(serverURL: URL, replicaPath: String) {
        self.serverURL = serverURL
        self.replicaPath = replicaPath
        tokenStore = FileTokenStore(path: replicaPath + ".token")
        transport = URLSessionTransport()
    }
}

/// An exact offline replica of a signed-in family's data, kept in sync with a SyncAPI server (protocol.md).
///
/// Reads are local and instant. Saves and deletes apply locally at once and reach the server with the next `sync()`
/// (or `push()`). `sync()` is one `POST /group` round trip whose answers are applied in one local transaction.
public final class SyncClient: Sendable {
    public let configuration: SyncClientConfiguration
    public let replica: Replica
    let statusCenter = StatusCenter()
    let flight = SingleFlight()
    let session: Locked<ClientSession?>
    let conflictHandlers = Locked<[SyncCollection: ConflictHandler]>([:])
    let liveTask = Locked<Task<Void, Never>?>(nil)

    public init(configuration: SyncClientConfiguration) throws {
        self.configuration = configuration
        replica = try Replica(path: configuration.replicaPath)
        session = Locked(try configuration.tokenStore.load())
        try refreshCounts()
    }

    // MARK: Reading

    public var isSignedIn: Bool { session.withLock { $0 != nil } }
    public var currentSession: ClientSession? { session.withLock { $0 } }
    public var status: SyncStatus { statusCenter.current }
    public var statusUpdates: AsyncStream<SyncStatus> { statusCenter.updates() }
    public var dateOfSync: String? { try? replica.pool.read { db in try Replica.meta(db, "date") } }

    public func items(_ collection: SyncCollection, parent: String? = nil) throws -> [JSONObject] {
        try replica.pool.read { db in try Replica.visibleItems(db, collection, parent: parent) }
    }

    public func item(_ collection: SyncCollection, id: String, parent: String? = nil) throws -> JSONObject? {
        try replica.pool.read { db in try Replica.visibleItem(db, collection, id: id, parent: parent) }
    }

    public func all<M: SyncModel>(_ type: M.Type, parent: String? = nil) throws -> [M] {
        try items(M.collection, parent: parent).map { object in
            var object = object
            if let parent { object["_parent"] = .string(parent) }
            return try JSONDecoder().decode(M.self, from: Data(JSONValue.object(object).text.utf8))
        }
    }

    /// Whether the replica holds the whole list (`nomore`), for threads and the wall, or the children of a parent.
    public func hasAll(_ list: PagedList, parent: String? = nil) -> Bool {
        let key = parent.map { "nomore.\(list.rawValue).\($0)" } ?? "nomore.\(list.rawValue)"
        return (try? replica.pool.read { db in try Replica.meta(db, key) }) == "1"
    }

    /// Any query on the replica, observed: a fresh value after every sync and every local write (GRDB
    /// `ValueObservation`), for SwiftUI or any async consumer.
    public func observe<T: Sendable>(_ fetch: @escaping @Sendable (Database) throws -> T) -> AsyncValueObservation<T> {
        ValueObservation.tracking(fetch).values(in: replica.pool)
    }

    /// The visible items of a collection, observed.
    public func observeItems(_ collection: SyncCollection, parent: String? = nil) -> AsyncValueObservation<[JSONObject]> {
        observe { db in try Replica.visibleItems(db, collection, parent: parent) }
    }

    public func pendingOperations() throws -> [PendingOperation] { try replica.pool.read { db in try Replica.pending(db) } }
    public func failedOperations() throws -> [FailedOperation] { try replica.pool.read { db in try Replica.failed(db) } }

    // MARK: Writing locally

    public func save(_ collection: SyncCollection, id: String, parent: String? = nil, json: JSONObject) async throws {
        guard collection != .accounts else { throw SyncClientError.invalid("accounts are read-only") }
        guard (collection.parentCollection != nil) == (parent != nil) else {
            throw SyncClientError.invalid("\(collection.rawValue) \(collection.parentCollection == nil ? "take no" : "need a") parent")
        }
        try await replica.pool.write { db in try Replica.save(db, collection, id: id, parent: parent ?? "", json) }
        try refreshCounts()
    }

    public func save<M: SyncModel>(_ model: M) async throws {
        var object = try JSONValue.parse(JSONEncoder().encode(model)).objectValue ?? [:]
        object["_parent"] = nil
        try await save(M.collection, id: model.id, parent: model.parentID, json: object)
    }

    public func delete(_ collection: SyncCollection, id: String, parent: String? = nil) async throws {
        guard collection.kind != .singleton, collection != .accounts else {
            throw SyncClientError.invalid("\(collection.rawValue) cannot be deleted")
        }
        try await replica.pool.write { db in try Replica.delete(db, collection, id: id, parent: parent ?? "") }
        try refreshCounts()
    }

    public func setConflictHandler(_ collection: SyncCollection, _ handler: @escaping ConflictHandler) {
        conflictHandlers.withLock { $0[collection] = handler }
    }

    /// Erases the replica's data (items, queue, date), keeping the session.
    public func reset() async throws {
        try await replica.pool.write { db in try Replica.eraseData(db, keepingSession: true) }
        try refreshCounts()
    }

    func refreshCounts() throws {
        let (pending, failed, lists) = try replica.pool.read { db -> (Int, Int, [String: SyncStatus.ListProgress]) in
            var lists: [String: SyncStatus.ListProgress] = [:]
            for collection in [SyncCollection.contacts, .events, .places, .threads, .wall, .members] {
                let complete = collection.kind == .paginated ? try Replica.meta(db, "nomore.\(collection.rawValue)") == "1" : true
                lists[collection.rawValue] = .init(count: try Replica.serverCount(db, collection), complete: complete)
            }
            return (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM queue") ?? 0, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM failed") ?? 0,
                lists
            )
        }
        statusCenter.update {
            $0.pendingWrites = pending
            $0.failedWrites = failed
            $0.lists = lists
        }
    }
}

/// Runs one sync at a time: a call made while one runs waits for it and gets its result.
actor SingleFlight {
    private var running: Task<SyncReport, any Error>?

    func run(_ work: @escaping @Sendable () async throws -> SyncReport) async throws -> SyncReport {
        if let running { return try await running.value }
        let task = Task { try await work() }
        running = task
        defer { running = nil }
        return try await task.value
    }
}
