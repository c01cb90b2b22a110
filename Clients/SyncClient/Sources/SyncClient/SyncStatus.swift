import Foundation

/// What the app shows about syncing: a fresh value on every change (`SyncClient.statusUpdates`).
public struct SyncStatus: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case idle, syncing, offline
        case error(String)
    }

    public var state: State = .idle
    /// Writes waiting to reach the server, and writes it refused for good.
    public var pendingWrites = 0
    public var failedWrites = 0
    /// Per list (`contacts`, `threads`…): how many items the replica holds and whether it holds the whole list.
    public var lists: [String: ListProgress] = [:]
    public var lastSuccessfulSync: Date?
    public var lastError: String?
    public var live = false
    /// Live mode holds an open change stream right now (false while it reconnects).
    public var liveConnected = false

    public struct ListProgress: Sendable, Equatable {
        public var count: Int
        public var complete: Bool
    }
}

/// Keeps the current status and hands every change to every listener.
final class StatusCenter: Sendable {
    private let state = Locked<(status: SyncStatus, listeners: [UUID: AsyncStream<SyncStatus>.Continuation])>((SyncStatus(), [:]))

    var current: SyncStatus { state.withLock { $0.status } }

    func update(_ change: (inout SyncStatus) -> Void) {
        let (status, listeners) = state.withLock { state -> (SyncStatus, [AsyncStream<SyncStatus>.Continuation]) in
            change(&state.status)
            return (state.status, Array(state.listeners.values))
        }
        for listener in listeners { listener.yield(status) }
    }

    func updates() -> AsyncStream<SyncStatus> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(1))
        let current = state.withLock { state -> SyncStatus in
            state.listeners[id] = continuation
            return state.status
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        return stream
    }
}

/// What one `sync()` did.
public struct SyncReport: Sendable, Equatable {
    public var pushed = 0
    public var failed = 0
    public var date: String?
    /// Answers of sub-requests added to the sync's group (`verify`).
    var extras: [String: JSONValue] = [:]
}

/// What `verify()` found: the lists whose count or digest differed from the server's, now re-downloaded.
public struct VerifyReport: Sendable, Equatable {
    public var checked: [String] = []
    public var repaired: [String] = []
    public var date: String?
}

/// The three versions of an item in a write conflict (a 412 on push).
public struct ConflictVersions: Sendable {
    /// The server's version the local edit was made on (nil: created here).
    public let base: JSONObject?
    /// The local edit (nil: a delete).
    public let local: JSONObject?
    /// The server's version now (nil: deleted on the server).
    public let server: JSONObject?
}

/// How to settle a conflict.
public enum ConflictResolution: Sendable {
    /// Keep the server's version; the local edit is dropped (the default).
    case keepServer
    /// Write the local edit over the server's version.
    case keepLocal
    /// Write this merged state instead.
    case merged(JSONObject)
}

public typealias ConflictHandler = @Sendable (ConflictVersions) -> ConflictResolution
