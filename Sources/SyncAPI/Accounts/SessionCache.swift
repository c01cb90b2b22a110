import Synchronization

/// The sessions of recently used bearer tokens, so that a request costs no token lookup in the database (the lookup
/// would be one of a delta's two round trips).
///
/// A revoked token must stop working at once (protocol §1), on every instance. Revocations (logout, password change)
/// reach every instance as a hub notice (`ChangeHub.revokeTokens`: the write path on SQLite, `NOTIFY` on PostgreSQL),
/// which drops every cached token of the family; the instance that revoked drops them before it answers. While those
/// notices may be missed (the PostgreSQL listener is reconnecting) the cache is off, and turning it back on empties it.
/// An entry also ends at its token's expiry and after `lifetime`, and a lookup that raced a revocation is not kept.
public final class SessionCache: Sendable {
    private struct Entry {
        let session: Session
        let validUntilMs: Int64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var tokensByFamily: [String: Set<String>] = [:]
        var live: Bool
        /// Counts revocations; a lookup remembers only when none of its family happened since it began.
        var epoch: UInt64 = 0
        /// The latest revocations, newest last, with the epoch each one made.
        var recent: [(family: String?, epoch: UInt64)] = []
    }

    private let state: Mutex<State>
    let capacity: Int
    let lifetimeMs: Int64
    private static let recentLimit = 256

    /// `live`: whether revocations reach this instance now (true for SQLite, whose write path is in-process).
    public init(live: Bool, capacity: Int = 100_000, lifetime: Duration = .seconds(60)) {
        state = Mutex(State(live: live))
        self.capacity = capacity
        self.lifetimeMs = Int64(lifetime.components.seconds) * 1000
    }

    /// Where a lookup begins: pass it back to `remember`.
    public func ticket() -> UInt64 {
        state.withLock { $0.epoch }
    }

    /// The cached session of a token hash, if it is still good.
    public func session(tokenHash: String, nowMs: Int64) -> Session? {
        state.withLock { state in
            guard state.live, let entry = state.entries[tokenHash] else { return nil }
            guard nowMs < entry.validUntilMs else {
                Self.remove(tokenHash, entry.session.familyID, from: &state)
                return nil
            }
            return entry.session
        }
    }

    /// Keeps a session the database just answered, unless a revocation of its family ran since `ticket`.
    public func remember(tokenHash: String, session: Session, expiresMs: Int64, nowMs: Int64, ticket: UInt64) {
        state.withLock { state in
            guard state.live, !Self.revoked(session.familyID, since: ticket, in: state) else { return }
            if state.entries.count >= capacity, state.entries[tokenHash] == nil {
                // Full: start over rather than track ages (a refill costs one lookup per token).
                state.entries = [:]
                state.tokensByFamily = [:]
            }
            state.entries[tokenHash] = Entry(session: session, validUntilMs: min(expiresMs, nowMs + lifetimeMs))
            state.tokensByFamily[session.familyID, default: []].insert(tokenHash)
        }
    }

    /// A token of `family` was revoked (or may have been): drop all of the family's.
    public func revoke(family: String) {
        state.withLock { state in
            Self.record(family, in: &state)
            for hash in state.tokensByFamily.removeValue(forKey: family) ?? [] { state.entries[hash] = nil }
        }
    }

    /// Turns the cache on or off (revocation notices flowing or not); either way it starts empty.
    public func setLive(_ live: Bool) {
        state.withLock { state in
            Self.record(nil, in: &state)
            state.live = live
            state.entries = [:]
            state.tokensByFamily = [:]
        }
    }

    /// Whether revocations reach this instance now (false while the PostgreSQL listener may be deaf).
    public var isLive: Bool { state.withLock { $0.live } }

    /// How many sessions are cached (for tests and metrics).
    public var count: Int { state.withLock { $0.entries.count } }

    private static func record(_ family: String?, in state: inout State) {
        state.epoch &+= 1
        state.recent.append((family, state.epoch))
        if state.recent.count > recentLimit { state.recent.removeFirst(state.recent.count - recentLimit) }
    }

    private static func revoked(_ family: String, since ticket: UInt64, in state: State) -> Bool {
        guard state.epoch != ticket else { return false }
        // Older than what `recent` holds: assume the worst.
        guard let oldest = state.recent.first, oldest.epoch <= ticket + 1 else { return true }
        return state.recent.contains { $0.epoch > ticket && ($0.family == nil || $0.family == family) }
    }

    private static func remove(_ hash: String, _ family: String, from state: inout State) {
        state.entries[hash] = nil
        state.tokensByFamily[family]?.remove(hash)
        if state.tokensByFamily[family]?.isEmpty == true { state.tokensByFamily[family] = nil }
    }
}
