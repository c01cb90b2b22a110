import Foundation
import SyncClient

/// An in-memory SyncAPI server for an app's unit tests: plug it in as the client's transport
/// (`configuration.transport = server`) and script it. It takes sign-up and login, `POST /group`, the item calls
/// (PUT, PATCH, GET, DELETE, with ETags and `If-Match`), `GET /model` and the sync endpoints of its model (the
/// default model's unless given another, e.g. an app's generated `ServerModel`), and media. Every
/// list and the singleton sync answers a date it gave with what moved since (`sync: true`: the items written after it and
/// the ids deleted after it); a paginated sync is answered whole (`sync: false`, which the protocol allows). Live mode's
/// `GET /changes` tells each write (another device's as the client's own) as a `change` notice, as the server does.
/// `time` sets the clock `created` and `modified` are read from. Several clients (devices) may share one fake: they
/// sign in to the same account and see each other's writes. Its `limits` are served
/// and enforced (400 `invalid_group`, 413), and may be lowered mid-test. Spaces (protocol §15):
/// the account is the owner of its home space, `familyID`; `join(space:role:)` and `leave(space:)` change its
/// memberships; each space has its own items and date of sync, served under `/spaces/{id}` (404 outside the account's
/// spaces), listed by `GET /spaces` and followed by `GET /changes?spaces=all`. Scripting: `failNext(_:status:)` (a 503
/// or any status), `answerNext(_:)` (any answer, as given), `isOffline` (no answer at all), `edit(_:id:json:)` and
/// `remove(_:id:)` (another device's write: the next push of the same item gets a 412; `space:` for another space than
/// the home one), `revokeSessions()` (every token stops working), `limits`, `items(_:)` and `calls`.
public final class FakeSyncServer: HTTPTransport, Sendable {
    /// Thrown instead of an answer while `isOffline` (the SDK reads it as a network failure).
    public struct Offline: Error {}

    struct Item {
        var json: JSONObject
        var version: Int
    }

    struct State {
        /// The space whose data `version` and `items` are: the one the call being answered addresses, else the home
        /// space (`enter(_:)` switches).
        var space = FakeSyncServer.home
        var version = 1
        var items: [String: [String: Item]] = [:]  // "collection/parent" → id → item
        /// The deleted items' versions, as `items` keys them (a delta answer lists those after its date).
        var tombstones: [String: [String: Int]] = [:]
        /// The other spaces' counters, items and tombstones.
        var otherSpaces: [String: (version: Int, items: [String: [String: Item]], tombstones: [String: [String: Int]])] = [:]
        /// The account's spaces, in join order.
        var memberships = [SpaceRoleInfo(id: FakeSyncServer.home, role: "owner")]
        /// The open `GET /changes?spaces=all` streams, and what they were last told (listing, date per space).
        var listeners: [UUID: AsyncThrowingStream<Data, any Error>.Continuation] = [:]
        var announced: (spaces: [SpaceRoleInfo], dates: [String: String]) = ([], [:])
        /// The open `GET /changes` streams of one space (live mode), and the date each was last told.
        var liveStreams: [UUID: (space: String, told: String, continuation: AsyncThrowingStream<Data, any Error>.Continuation)] = [:]
        /// The time `created` and `modified` are stamped with; nil: the real clock.
        var time: Date?
        /// `revokeSessions()` was called: authenticated calls answer 401 until the next sign-in.
        var revoked = false
        var media: [String: Data] = [:]
        var failures: [Int] = []
        /// Answers given as they are to the next calls (`answerNext`).
        var scripted: [HTTPAnswer] = []
        /// What `GET /api/v1/` says and what the groups and bodies are held to.
        var limits = ServerDescription.Limits()
        var offline = false
        var calls: [String] = []
        var accounts: [String: String] = [:]  // username → password
    }

    let state = Locked(State())
    static let home = "fake-family"
    /// The account's home space.
    public let familyID = FakeSyncServer.home
    public let accountID = "fake-account"
    /// The data model it serves.
    public let model: ServerModel

    public init(model: ServerModel = .family) {
        self.model = model
    }

    // MARK: Scripting

    /// The next `count` calls answer `status` (503 by default: transient, retried by the SDK).
    public func failNext(_ count: Int = 1, status: Int = 503) {
        state.withLock { $0.failures += Array(repeating: status, count: count) }
    }

    /// The next call gets `answer` as it is (any status, headers and body: a proxy's error page, an answer far larger
    /// than the client reads), after the scripted failures; several calls queue their answers in order.
    public func answerNext(_ answer: HTTPAnswer) {
        state.withLock { $0.scripted.append(answer) }
    }

    /// The server's limits (protocol §8), as `GET /api/v1/` says them and as it holds calls to them: a group of more
    /// than `groupMaxRequests` calls answers 400 `invalid_group`, a body over `bodyMaxBytes` 413 `payload_too_large`
    /// (media aside). Lower them mid-test to play an operator who changed `--group-max-requests` or
    /// `--body-max-bytes`.
    public var limits: ServerDescription.Limits {
        get { state.withLock { $0.limits } }
        set { state.withLock { $0.limits = newValue } }
    }

    /// The time the server stamps `created` and `modified` with: set it (and move it) for answers a test compares
    /// whole; nil (the default) reads the real clock.
    public var time: Date? {
        get { state.withLock { $0.time } }
        set { state.withLock { $0.time = newValue } }
    }

    /// While true, no call gets an answer (offline), and the open event streams drop as it goes offline.
    public var isOffline: Bool {
        get { state.withLock { $0.offline } }
        set {
            let dropped = state.withLock { state in
                state.offline = newValue
                guard newValue else { return [AsyncThrowingStream<Data, any Error>.Continuation]() }
                defer {
                    state.listeners = [:]
                    state.liveStreams = [:]
                }
                return Array(state.listeners.values) + state.liveStreams.values.map(\.continuation)
            }
            // Outside the lock: finishing runs the streams' termination handlers, which take it.
            for stream in dropped { stream.finish(throwing: Offline()) }
        }
    }

    /// Another device writes an item (its version moves: a push of the same item based on the old one gets a 412), in
    /// the home space unless `space` says another.
    public func edit(_ collection: SyncCollection, id: String, parent: String? = nil, json: JSONObject, space: String? = nil) {
        inSpace(space) { state in
            _ = Self.store(&state, model[collection], parent ?? "", id, json, author: "other-device")
        }
    }

    /// Another device deletes an item.
    public func remove(_ collection: SyncCollection, id: String, parent: String? = nil, space: String? = nil) {
        inSpace(space) { state in
            state.delete(collection.rawValue + "/" + (parent ?? ""), id)
        }
    }

    /// The live items of a collection, by id (of one parent for children).
    public func items(_ collection: SyncCollection, parent: String? = nil, space: String? = nil) -> [String: JSONObject] {
        inSpace(space) { $0.items[collection.rawValue + "/" + (parent ?? ""), default: [:]].mapValues(\.json) }
    }

    /// The calls received, as `METHOD path` (sub-requests of a group included, after the group).
    public var calls: [String] { state.withLock { $0.calls } }

    /// The media uploaded, by SHA-256.
    public var media: [String: Data] { state.withLock { $0.media } }

    // MARK: HTTPTransport

    public func send(_ call: HTTPCall) async throws -> HTTPAnswer {
        try state.withLock { state in
            if let refusal = try Self.refusal(&state, call) { return refusal }
            defer { Self.announce(&state) }
            return answer(&state, call)
        }
    }

    /// What a call gets before it is answered: nothing while offline (thrown), a scripted failure, or a 401 once the
    /// sessions were revoked (until a sign-in); it is recorded in `calls`.
    static func refusal(_ state: inout State, _ call: HTTPCall) throws -> HTTPAnswer? {
        if state.offline { throw Offline() }
        state.calls.append("\(call.method) \(apiPath(call.url))")
        if !state.failures.isEmpty {
            let status = state.failures.removeFirst()
            return problem(status, code: status == 503 ? "unavailable" : "scripted", retryAfter: status == 503 || status == 429)
        }
        if !state.scripted.isEmpty { return state.scripted.removeFirst() }
        if let body = call.body, body.count > state.limits.bodyMaxBytes, apiPath(call.url) != "/media" {
            return problem(413, code: "payload_too_large")
        }
        if ["/signup", "/login"].contains(apiPath(call.url)) {
            state.revoked = false
        } else if state.revoked, call.headers["Authorization"] != nil {
            return problem(401, code: "unauthorized")
        }
        return nil
    }

    public func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        if Self.queryValue(Self.apiPath(call.url), "spaces") != nil { return try allSpaces(call) }
        if let space = Self.liveStreamSpace(Self.apiPath(call.url)) { return try liveStream(call, space: space) }
        let answer = try await send(call)
        return (
            answer.status,
            AsyncThrowingStream { continuation in
                continuation.yield(answer.body)
                continuation.finish()
            }
        )
    }
}
