import Foundation

/// A space of the account and the account's role there, as the all-spaces stream lists it: the stream's listing is
/// how an app learns, without polling `spaces()`, that it joined a space, lost one or changed role.
public struct SpaceRoleInfo: Codable, Sendable, Hashable {
    public let id: String
    /// `owner`, `member` or `reader`.
    public let role: String

    public init(id: String, role: String) {
        self.id = id
        self.role = role
    }
}

/// One notice of `GET /changes?spaces=all` (protocol §15): the stream that follows every space of an account at once,
/// so that an app in many spaces keeps one connection instead of one per space.
public enum SpaceEvent: Sendable, Equatable {
    /// The account's spaces and roles, in the order it joined them: first on each connection, then whenever a
    /// membership or role changes. A space no longer listed is one the account left or was removed from.
    case spaces([SpaceRoleInfo])
    /// A space's current date of sync: one per space right after the listing (the stream has no date to resume from),
    /// one for a space joined later, then one each time a space moves. A replica already at `date` is current.
    case changed(space: String, date: String)
}

extension SyncClient {
    /// Follows every space of the account with one stream, `GET /changes?spaces=all` (protocol §15; always unprefixed,
    /// whichever space this client holds). Each connection starts with `.spaces` and one `.changed` per space (so a
    /// reconnection, after the server's `retry:` hint or the retry policy's backoff, says everything again); a
    /// network failure or a 5xx is retried like live mode's. The stream finishes when the iterating task is cancelled,
    /// throws `SyncClientError.notSignedIn` once signed out (a 401 ends the session, as everywhere), and throws the
    /// server's refusal (400 `invalid_parameter` from a server without this stream) without retrying it.
    /// `SpaceSet` is what an app uses: it syncs and erases replicas from these events.
    public func spaceEvents() -> AsyncThrowingStream<SpaceEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                let end = await followEventStream(refusalEnds: true, request: { (url("/changes?spaces=all", prefixed: false), [:]) }) { events in
                    for event in events { if let notice = Self.spaceEvent(event) { continuation.yield(notice) } }
                }
                switch end {
                case .cancelled: continuation.finish()
                case .signedOut: continuation.finish(throwing: SyncClientError.notSignedIn)
                case .refused(let error): continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A server event of the all-spaces stream as a `SpaceEvent`; nil for another event or one that does not decode
    /// (a later server may send more).
    static func spaceEvent(_ event: ServerEvent) -> SpaceEvent? {
        struct Listing: Decodable { let spaces: [SpaceRoleInfo] }
        struct Change: Decodable {
            let space: String
            let date: String
        }
        let data = Data(event.data.utf8)
        switch event.event {
        case "spaces": return (try? JSONDecoder().decode(Listing.self, from: data)).map { .spaces($0.spaces) }
        case "change": return (try? JSONDecoder().decode(Change.self, from: data)).map { .changed(space: $0.space, date: $0.date) }
        default: return nil
        }
    }
}
