import Foundation
import SyncClient

/// Spaces (protocol §15): memberships, paths under `/spaces/{id}`, `GET /spaces` and `GET /changes?spaces=all`.
extension FakeSyncServer {
    // MARK: Scripting

    /// The account joins `space` with `role`, or takes `role` there when it is a member already: open all-spaces
    /// streams get the new listing, and a newly joined space's `change`.
    public func join(space: String, role: String = "member") {
        inSpace(nil) { state in
            if let index = state.memberships.firstIndex(where: { $0.id == space }) {
                state.memberships[index] = SpaceRoleInfo(id: space, role: role)
            } else {
                state.memberships.append(SpaceRoleInfo(id: space, role: role))
            }
        }
    }

    /// The account leaves `space` (or is removed from it): its paths answer 404, and open all-spaces streams get the
    /// listing without it; its live streams end. Its items stay, for a later `join`.
    public func leave(space: String) {
        let ended = inSpace(nil) { state in
            state.memberships.removeAll { $0.id == space }
            return state.liveStreams.values.filter { $0.space == space }.map(\.continuation)
        }
        // Its live streams end (outside the lock: finishing runs their termination handlers, which take it).
        for stream in ended { stream.finish() }
    }

    /// Every token stops working (a logout elsewhere, a password change): authenticated calls answer 401 until the
    /// next sign-in, and open all-spaces streams end.
    public func revokeSessions() {
        let open = state.withLock { state in
            state.revoked = true
            defer {
                state.listeners = [:]
                state.liveStreams = [:]
            }
            return Array(state.listeners.values) + state.liveStreams.values.map(\.continuation)
        }
        // Outside the lock: finishing runs the streams' termination handlers, which take it.
        for stream in open { stream.finish() }
    }

    /// The account's spaces and roles, in join order.
    public var memberships: [SpaceRoleInfo] { state.withLock { $0.memberships } }

    // MARK: Serving

    /// Runs `body` on the data of `space` (the home space for nil), then tells open streams what moved.
    func inSpace<T: Sendable>(_ space: String?, _ body: (inout State) -> T) -> T {
        state.withLock { state in
            let previous = state.space
            state.enter(space ?? Self.home)
            defer {
                state.enter(previous)
                Self.announce(&state)
            }
            return body(&state)
        }
    }

    /// A call under `/spaces/{id}/…` answered in that space, as the unprefixed path would be there (404 outside the
    /// account's spaces); nil for any other call.
    func spaceAnswer(_ state: inout State, _ call: HTTPCall, path: String) -> HTTPAnswer? {
        let parts = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, parts[1] == "spaces", let slash = parts[2].firstIndex(of: "/") else { return nil }
        let space = String(parts[2][..<slash]).removingPercentEncoding ?? String(parts[2][..<slash])
        guard state.memberships.contains(where: { $0.id == space }) else { return Self.problem(404, code: "not_found") }
        var unprefixed = call
        unprefixed.url = URL(string: "http://fake/api/v1" + parts[2][slash...])!
        let previous = state.space
        state.enter(space)
        defer { state.enter(previous) }
        return answer(&state, unprefixed)
    }

    /// `GET /spaces`.
    static func spacesAnswer(_ state: State) -> HTTPAnswer {
        json(
            200,
            .array(
                state.memberships.map {
                    ["id": .string($0.id), "name": .string($0.id), "role": .string($0.role), "home": .bool($0.id == home)]
                }))
    }

    /// `GET /changes?spaces=all`: `retry:`, the listing and each space's date at once, then what moves, until the
    /// sessions are revoked or the consumer stops. Another `spaces` value, or a prefixed path, is 400.
    func allSpaces(_ call: HTTPCall) throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        let (bytes, continuation) = AsyncThrowingStream.makeStream(of: Data.self)
        let id = UUID()
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) } }
        let refusal = try state.withLock { state -> HTTPAnswer? in
            if let refusal = try Self.refusal(&state, call) { return refusal }
            guard Self.apiPath(call.url) == "/changes?spaces=all" else { return Self.problem(400, code: "invalid_parameter") }
            // The streams open already are told what they missed, so that the new one's opening is the last word.
            Self.announce(&state)
            var opening = "retry: 2000\n\n" + Self.event("spaces", ["spaces": .array(state.memberships.map(Self.json))])
            for space in state.memberships {
                opening += Self.event("change", ["space": .string(space.id), "date": .string(state.date(of: space.id))])
            }
            continuation.yield(Data(opening.utf8))
            state.listeners[id] = continuation
            return nil
        }
        guard let refusal else { return (200, bytes) }
        continuation.yield(refusal.body)
        continuation.finish()
        return (refusal.status, bytes)
    }

    /// Tells open streams what changed since they were last told: all-spaces streams the listing and each space whose
    /// date moved (or that is newly listed), a space's live streams its new date.
    static func announce(_ state: inout State) {
        var text = ""
        if state.memberships != state.announced.spaces {
            text += event("spaces", ["spaces": .array(state.memberships.map(json))])
            state.announced.spaces = state.memberships
        }
        var dates: [String: String] = [:]
        for space in state.memberships {
            dates[space.id] = state.date(of: space.id)
            if state.announced.dates[space.id] != dates[space.id] {
                text += event("change", ["space": .string(space.id), "date": .string(dates[space.id] ?? "")])
            }
        }
        state.announced.dates = dates
        announceLive(&state)
        guard !text.isEmpty else { return }
        for listener in state.listeners.values { listener.yield(Data(text.utf8)) }
    }

    static func event(_ name: String, _ data: JSONValue) -> String { "event: \(name)\ndata: \(data.text)\n\n" }

    static func json(_ space: SpaceRoleInfo) -> JSONValue { ["id": .string(space.id), "role": .string(space.role)] }
}

extension FakeSyncServer.State {
    /// Deletes an item of the current space (`key`: "collection/parent") at a new version, kept as a tombstone.
    mutating func delete(_ key: String, _ id: String) {
        version += 1
        items[key]?[id] = nil
        tombstones[key, default: [:]][id] = version
    }

    /// Makes `space`'s data the one `version`, `items` and `tombstones` are.
    mutating func enter(_ space: String) {
        guard space != self.space else { return }
        otherSpaces[self.space] = (version, items, tombstones)
        (version, items, tombstones) = otherSpaces.removeValue(forKey: space) ?? (1, [:], [:])
        self.space = space
    }

    /// A space's date of sync, as its sync answers say it.
    func date(of space: String) -> String {
        "fake.\(space == self.space ? version : otherSpaces[space]?.version ?? 1)"
    }
}
