import Foundation

/// What the app shows about syncing (`SyncClient.status`, `statusUpdates`): a fresh value on every change.
public struct SyncStatus: Sendable, Equatable {
    /// What the client is doing.
    public enum State: Sendable, Equatable {
        case idle, syncing
        /// The server could not be reached (or was busy): writes stay queued, the next sync retries.
        case offline
        /// The last sync failed for another reason than the network: signed out (`.notSignedIn`), refused, or the
        /// device (`.local`).
        case error(SyncClientError)
    }

    /// How much of one list the replica holds.
    public struct ListProgress: Sendable, Equatable {
        /// Items of the server held.
        public var count: Int
        /// Whether the replica holds the whole list (always for a list; `nomore` for a paginated one).
        public var complete: Bool

        public init(count: Int, complete: Bool) {
            self.count = count
            self.complete = complete
        }
    }

    public var state: State = .idle
    public var signedIn = false
    /// Writes waiting to reach the server, and writes it refused for good.
    public var pendingWrites = 0
    public var failedWrites = 0
    /// Per list and paginated list of the model (`contacts`, `threads`…), by name.
    public var lists: [String: ListProgress] = [:]
    public var lastSuccessfulSync: Date?
    /// Why the last sync or push failed, nil once one succeeds.
    public var lastError: SyncClientError?
    /// Live mode is on.
    public var live = false
    /// Live mode holds an open change stream right now (false while it reconnects).
    public var liveConnected = false

    /// For previews and tests (`SyncStatus(state: .offline, pendingWrites: 3)`).
    public init(
        state: State = .idle, signedIn: Bool = false, pendingWrites: Int = 0, failedWrites: Int = 0, lists: [String: ListProgress] = [:],
        lastSuccessfulSync: Date? = nil, lastError: SyncClientError? = nil, live: Bool = false, liveConnected: Bool = false
    ) {
        self.state = state
        self.signedIn = signedIn
        self.pendingWrites = pendingWrites
        self.failedWrites = failedWrites
        self.lists = lists
        self.lastSuccessfulSync = lastSuccessfulSync
        self.lastError = lastError
        self.live = live
        self.liveConnected = liveConnected
    }
}
