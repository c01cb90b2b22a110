import ServiceLifecycle

/// `GET /changes?spaces=all` (protocol §15): one stream for every space of the caller. It opens with `event: spaces`
/// (the caller's spaces and roles) and one `event: change` per space (`{"space", "date"}`, its current date), so that
/// an app that synced before opening it misses nothing that moved in between; then it sends a `change` whenever one of
/// the spaces moves and a `spaces` whenever the account's memberships or roles change (a space joined comes with its
/// `change` at once). It follows §9's conventions, without `id:` (a reconnecting app syncs its spaces, as at start).
/// Streams wait on the hub for each of the account's spaces and its `@account` key, which every membership change of
/// the account notifies, on every instance.
extension ChangeFeed {
    public func openAllSpaces(_ principal: AccountSession, token: String) async throws -> Opened {
        let accountKey = AccountSession.accountKey(principal.accountID)
        let slot = StreamSlot(lease: try streams.open(account: principal.accountID), hub: hub, family: accountKey)
        let state = AllSpacesState(engine: engine, accounts: accounts, token: token, accountKey: accountKey)
        let start: AllSpacesState.Start
        do {
            start = try await Deadline.run(within: settings.startLimit, timers: timers) { budget in
                guard let start = try await state.bounded(by: budget).read(slot: slot, known: AllSpacesState.Start(), readAll: true) else {
                    throw SyncError.unauthorized
                }
                return start
            }
        } catch {
            slot.release()
            throw error
        }
        let (hub, ping, maxDuration, timers) = (hub, settings.ping, settings.maxDuration, timers)
        let recheck = hub == nil ? settings.poll : settings.recheck
        return Opened(slot: slot) { write, watch, stop in
            let clock = ContinuousClock()
            let end = clock.now + maxDuration
            var lastCheck = clock.now
            var pacer = StreamPacer(ping: ping)
            var sent: [SpaceMembership]? = nil
            var current = start
            while true {
                var events = ""
                if current.memberships != sent {
                    events += Self.spacesEvent(current.memberships)
                    sent = current.memberships
                }
                for (space, date) in current.moved { events += Self.changeEvent(space: space, date: date) }
                try await pacer.send(events, write: write, watch: watch)
                current.moved = []
                let timeout = max(.milliseconds(10), min(recheck - (clock.now - lastCheck), pacer.untilPing, end - clock.now))
                let seen = current.generations
                if let hub {
                    await hub.wait(any: seen, timeout: timeout, stop: stop)
                } else {
                    try? await cancelWhenGracefulShutdown { try await timers.sleep(for: timeout) }
                }
                guard clock.now < end, !Task.isCancelled, !Task.isShuttingDownGracefully, !stop.isStopped, !slot.isReleased else { return }
                let notified = hub.map { hub in seen.contains { hub.generation(family: $0.key) != $0.value } } ?? false
                let due = clock.now - lastCheck >= recheck
                guard notified || due else { continue }
                // Without a hub, or while the listener may be deaf, a recheck reads every space's counter; with a live
                // hub only the spaces it notified are read (and the token, from the session cache).
                let readAll = due && !(hub?.sessions.isLive ?? false)
                if due { lastCheck = clock.now }
                guard let next = try await state.read(slot: slot, known: current, readAll: readAll) else { return }
                current = next
            }
        }
    }

    static func spacesEvent(_ memberships: [SpaceMembership]) -> String {
        var json = JSONWriter(capacity: 64 + 64 * memberships.count)
        json.raw("{\"spaces\":[")
        for (index, membership) in memberships.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"id\":")
            json.string(membership.spaceID)
            json.raw(",\"role\":")
            json.string(membership.role.rawValue)
            json.raw("}")
        }
        json.raw("]}")
        return "event: spaces\ndata: \(String(decoding: json.bytes, as: UTF8.self))\n\n"
    }

    static func changeEvent(space: String, date: String) -> String {
        var json = JSONWriter(capacity: 128)
        json.raw("{\"space\":")
        json.string(space)
        json.raw(",\"date\":")
        json.string(date)
        json.raw("}")
        return "event: change\ndata: \(String(decoding: json.bytes, as: UTF8.self))\n\n"
    }
}

/// What a stream of all spaces knows between two wake-ups, and how it reads the next state.
struct AllSpacesState: Sendable {
    let engine: SyncEngine
    let accounts: AccountService
    let token: String
    let accountKey: String

    /// The same state, its reads under `budget` (the stream's start).
    func bounded(by budget: Deadline.Budget?) -> AllSpacesState {
        AllSpacesState(engine: engine.bounded(by: budget), accounts: accounts.bounded(by: budget), token: token, accountKey: accountKey)
    }

    /// The account's spaces as last read, the counter value each was last announced at, the hub generations the
    /// stream waits past, and the spaces whose date moved since the last events (to send).
    struct Start: Sendable {
        var memberships: [SpaceMembership] = []
        var versions: [String: DatePosition] = [:]
        var generations: [String: UInt64] = [:]
        var moved: [(space: String, date: String)] = []
    }

    /// Reads the account's spaces (nil once the token stops working), follows them on the hub, and reads the counter
    /// of every space that is new, was notified since `known`, or (`readAll`) of all.
    func read(slot: StreamSlot, known: Start, readAll: Bool) async throws -> Start? {
        guard let principal = try await accounts.authenticate(token: token) else { return nil }
        let keys = Set(principal.memberships.map(\.spaceID) + [accountKey])
        // Generations first, then counters: a write after this read wakes the next wait.
        guard let generations = slot.follow(keys) else { return nil }
        var next = Start(memberships: principal.memberships, generations: generations)
        for membership in principal.memberships {
            let space = membership.spaceID
            guard let session = principal.session(in: space) else { continue }
            let previous = known.versions[space]
            let notified = known.generations[space] != generations[space]
            guard previous == nil || notified || readAll else {
                next.versions[space] = previous
                continue
            }
            let position: (date: String, at: DatePosition)
            if let previous, let heard = slot.hub?.latest(family: space), heard.version > previous.version || heard.history != previous.history,
                !readAll
            {
                // The notice named the counter value its write committed: no database read.
                position = (
                    try await engine.date(atVersion: heard.version, history: heard.history, session),
                    DatePosition(version: heard.version, history: heard.history)
                )
            } else {
                let read = try await engine.currentPosition(session)
                position = (read.date, DatePosition(version: read.version, history: read.history))
                slot.hub?.observe(family: space, version: read.version, history: read.history)
            }
            next.versions[space] = position.at
            // Past what was announced, or on another history (a failover: the new line may count below it).
            if previous.map({ position.at.version > $0.version || position.at.history != $0.history }) ?? true {
                next.moved.append((space, position.date))
            }
        }
        return next
    }
}
