/// The change listener's liveness as a value: from the pings it sends itself and hears back (or not), when its
/// connection is suspected, checked, deaf, or live again. `PostgresChangeListener.beat` carries out the actions (the
/// ping, the query, the session cache, the catch-ups, the waits on the application's clock); each event carries its
/// time, so every transition is a line of a table in its test.
///
/// A ping unheard for `suspectAfter` makes the connection suspected (the session cache off, the followed families'
/// counters read every heartbeat) until a ping is heard again; unheard for `deafAfter`, the connection is asked a
/// query of its own: one that answers is slow, not deaf, and keeps listening; one that does not is replaced.
package struct ListenerLiveness: Sendable {
    /// What the listener does next.
    package enum Action: Equatable, Sendable {
        /// Wait for the ping to be heard, until this time at the latest (then `timeout`).
        case wait(until: Duration)
        /// Suspected from now on: the session cache off and catch-ups every heartbeat; then wait, until this time.
        case suspect(waitUntil: Duration)
        /// Unheard past `deafAfter`: ask the listening connection a query of its own (then `connection(answered:)`).
        case checkConnection
        /// The connection did not answer its query: replace the listener.
        case deaf
        /// Send the next ping at this time; `clearSuspicion`: a ping is heard again after a suspicion (the session
        /// cache on, catch-ups stopped).
        case nextPing(at: Duration, clearSuspicion: Bool)
    }

    let heartbeat: Duration
    let suspectAfter: Duration
    let deafAfter: Duration
    /// The ping in flight, and when it was sent.
    private(set) var ping = -1
    private(set) var sentAt: Duration = .zero
    /// Whether a ping went unheard past `suspectAfter` and none was heard since.
    package private(set) var suspected = false

    package init(heartbeat: Duration, suspectAfter: Duration, deafAfter: Duration) {
        self.heartbeat = heartbeat
        self.deafAfter = deafAfter
        self.suspectAfter = min(suspectAfter, deafAfter)
    }

    /// Ping `n` is sent at `now`.
    package mutating func sent(_ n: Int, at now: Duration) -> Action {
        ping = n
        sentAt = now
        return .wait(until: now + (suspected ? deafAfter : suspectAfter))
    }

    /// Ping `n` is heard (notices come in order: nothing sent before it was missed).
    package mutating func heard(_ n: Int) -> Action {
        guard n >= ping else { return .wait(until: sentAt + (suspected ? deafAfter : suspectAfter)) }
        defer { suspected = false }
        return .nextPing(at: sentAt + heartbeat, clearSuspicion: suspected)
    }

    /// The time of a wait has come, and the ping is still unheard.
    package mutating func timeout(at now: Duration) -> Action {
        if now >= sentAt + deafAfter { return .checkConnection }
        if now >= sentAt + suspectAfter {
            guard !suspected else { return .wait(until: sentAt + deafAfter) }
            suspected = true
            return .suspect(waitUntil: sentAt + deafAfter)
        }
        return .wait(until: sentAt + suspectAfter)
    }

    /// The listening connection's own query answered (slow, not deaf: it keeps listening, still suspected until a ping
    /// is heard) or not (deaf).
    package mutating func connection(answered: Bool) -> Action {
        answered ? .nextPing(at: sentAt + heartbeat, clearSuspicion: false) : .deaf
    }
}
