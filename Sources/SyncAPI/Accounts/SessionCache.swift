import Synchronization

/// The sessions of recently used bearer tokens, so that a request costs no token lookup in the database (the lookup
/// would be one of a delta's two round trips).
///
/// A revoked token must stop working at once (protocol §1), and a membership change applies to the next call (§15), on
/// every instance. Revocations (logout, password change, a member removed or re-roled, a space joined) reach every
/// instance as a hub notice (`ChangeHub.revokeTokens`: the write path on SQLite, `NOTIFY` on PostgreSQL) naming a key:
/// a space, whose members' cached sessions all go, or `@account`, whose sessions go. A cached session is filed under
/// every space of its account and under its account; the instance that revoked drops them before it answers. While those
/// notices may be missed (the PostgreSQL listener is reconnecting) the cache is off, and turning it back on empties it.
/// An entry also ends at its token's expiry and after `lifetime`, and a lookup that raced a revocation is not kept.
public final class SessionCache: Sendable {
    private struct Entry {
        let session: AccountSession
        let validUntilMs: Int64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Cached token hashes by revocation key (`AccountSession.revocationKeys`).
        var tokensByKey: [String: Set<String>] = [:]
        var live: Bool
        /// Counts revocations; a lookup remembers only when none of its keys was revoked since it began.
        var epoch: UInt64 = 0
        /// The latest revocations, newest last, with the epoch each one made.
        var recent: [(key: String?, epoch: UInt64)] = []
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

    /// The revocation count while revocations reach this instance (nil while they may be missed): lookups of one
    /// token that begin between the same two revocations may share one database read, since none of them could have
    /// seen a revocation the others missed.
    func sharedLookupEpoch() -> UInt64? {
        state.withLock { $0.live ? $0.epoch : nil }
    }

    /// The cached session of a token hash, if it is still good.
    public func session(tokenHash: String, nowMs: Int64) -> AccountSession? {
        state.withLock { state in
            guard state.live, let entry = state.entries[tokenHash] else { return nil }
            guard nowMs < entry.validUntilMs else {
                Self.remove(tokenHash, entry.session, from: &state)
                return nil
            }
            return entry.session
        }
    }

    /// Keeps a session the database just answered, unless one of its keys was revoked since `ticket`.
    public func remember(tokenHash: String, session: AccountSession, expiresMs: Int64, nowMs: Int64, ticket: UInt64) {
        let keys = session.revocationKeys
        state.withLock { state in
            guard state.live, !Self.revoked(keys, since: ticket, in: state) else { return }
            if state.entries.count >= capacity, state.entries[tokenHash] == nil {
                // Full: start over rather than track ages (a refill costs one lookup per token).
                state.entries = [:]
                state.tokensByKey = [:]
            }
            if let previous = state.entries[tokenHash] { Self.remove(tokenHash, previous.session, from: &state) }
            state.entries[tokenHash] = Entry(session: session, validUntilMs: min(expiresMs, nowMs + lifetimeMs))
            for key in keys { state.tokensByKey[key, default: []].insert(tokenHash) }
        }
    }

    /// A token filed under `key` (a space, or `@account`) was revoked or its memberships changed (or may have): drop
    /// every session filed under it.
    public func revoke(family key: String) {
        state.withLock { state in
            Self.record(key, in: &state)
            for hash in state.tokensByKey.removeValue(forKey: key) ?? [] {
                if let entry = state.entries.removeValue(forKey: hash) { Self.unfile(hash, entry.session, except: key, from: &state) }
            }
        }
    }

    /// Turns the cache on or off (revocation notices flowing or not); either way it starts empty.
    public func setLive(_ live: Bool) {
        state.withLock { state in
            Self.record(nil, in: &state)
            state.live = live
            state.entries = [:]
            state.tokensByKey = [:]
        }
    }

    /// Whether revocations reach this instance now (false while the PostgreSQL listener may be deaf).
    public var isLive: Bool { state.withLock { $0.live } }

    /// How many sessions are cached (for tests and metrics).
    public var count: Int { state.withLock { $0.entries.count } }

    private static func record(_ key: String?, in state: inout State) {
        state.epoch &+= 1
        state.recent.append((key, state.epoch))
        if state.recent.count > recentLimit { state.recent.removeFirst(state.recent.count - recentLimit) }
    }

    private static func revoked(_ keys: [String], since ticket: UInt64, in state: State) -> Bool {
        guard state.epoch != ticket else { return false }
        // Older than what `recent` holds: assume the worst.
        guard let oldest = state.recent.first, oldest.epoch <= ticket + 1 else { return true }
        return state.recent.contains { revocation in
            revocation.epoch > ticket && (revocation.key.map { keys.contains($0) } ?? true)
        }
    }

    private static func remove(_ hash: String, _ session: AccountSession, from state: inout State) {
        state.entries[hash] = nil
        unfile(hash, session, except: nil, from: &state)
    }

    /// Takes a token off the lists of its session's keys (but `except`, which the caller empties).
    private static func unfile(_ hash: String, _ session: AccountSession, except: String?, from state: inout State) {
        for key in session.revocationKeys where key != except {
            state.tokensByKey[key]?.remove(hash)
            if state.tokensByKey[key]?.isEmpty == true { state.tokensByKey[key] = nil }
        }
    }
}
