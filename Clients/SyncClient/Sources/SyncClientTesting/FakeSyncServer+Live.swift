import Foundation
import SyncClient

/// Live mode's stream of one space (protocol §9) and the delta answers of its syncs (§3).
extension FakeSyncServer {
    /// The space a `GET /changes` path follows (`/changes…` the home space, `/spaces/{id}/changes…` that one); nil for
    /// any other path.
    static func liveStreamSpace(_ path: String) -> String? {
        let bare = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        if bare == "/changes" { return home }
        let parts = bare.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[1] == "spaces", parts[3] == "changes" else { return nil }
        return String(parts[2]).removingPercentEncoding ?? String(parts[2])
    }

    /// `GET /changes?date=D` (or `Last-Event-ID: D`): `retry:`, a `change` at once when the space moved past D (or D is
    /// not one of its dates), then one per write of the space, until the sessions are revoked, the account leaves the
    /// space or the consumer stops. 404 outside the account's spaces.
    func liveStream(_ call: HTTPCall, space: String) throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        let (bytes, continuation) = AsyncThrowingStream.makeStream(of: Data.self)
        let id = UUID()
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.liveStreams.removeValue(forKey: id) } }
        let refusal = try state.withLock { state -> HTTPAnswer? in
            if let refusal = try Self.refusal(&state, call) { return refusal }
            guard state.memberships.contains(where: { $0.id == space }) else { return Self.problem(404, code: "not_found") }
            Self.announce(&state)
            let seen = Self.queryValue(Self.apiPath(call.url), "date")?.removingPercentEncoding ?? call.headers["Last-Event-ID"]
            let date = state.date(of: space)
            continuation.yield(Data(("retry: 2000\n\n" + (seen == date ? "" : Self.notice(date))).utf8))
            state.liveStreams[id] = (space, date, continuation)
            return nil
        }
        guard let refusal else { return (200, bytes) }
        continuation.yield(refusal.body)
        continuation.finish()
        return (refusal.status, bytes)
    }

    /// A `change` notice of a space's stream, its date as the event's id.
    static func notice(_ date: String) -> String { "id: \(date)\n" + event("change", ["date": .string(date)]) }

    /// Tells each open stream of one space its space's new date, once per move.
    static func announceLive(_ state: inout State) {
        for (id, stream) in state.liveStreams {
            let date = state.date(of: stream.space)
            guard date != stream.told else { continue }
            stream.continuation.yield(Data(notice(date).utf8))
            state.liveStreams[id]?.told = date
        }
    }

    /// The version a sync's `date` names, when it is one this space gave (`fake.N`, N at most its counter): the
    /// answer is then a delta from it.
    static func since(_ query: String, _ state: State) -> Int? {
        guard let date = queryValue(query, "date")?.removingPercentEncoding, date.hasPrefix("fake."),
            let version = Int(date.dropFirst("fake.".count)), (1...state.version).contains(version)
        else { return nil }
        return version
    }

    /// A list's `updated` and `deleted` after `since` (every live item and no id without it), by id.
    static func changes(_ state: State, _ key: String, since: Int?) -> (updated: [JSONValue], deleted: [JSONValue]) {
        let items = (state.items[key] ?? [:]).filter { $0.value.version > since ?? 0 }.sorted { $0.key < $1.key }
        let gone = since.map { since in (state.tombstones[key] ?? [:]).filter { $0.value > since }.keys.sorted() } ?? []
        return (items.map { .object($0.value.json) }, gone.map { .string($0) })
    }
}
