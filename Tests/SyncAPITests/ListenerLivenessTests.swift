import SyncPostgres
import Testing

/// The change listener's liveness as tables of events and the actions they answer (heartbeat 2 s, suspected after
/// 1 s unheard, deaf after 5 s): no connection, no task, no waiting.
@Suite("Change listener's liveness")
struct ListenerLivenessTests {
    typealias Action = ListenerLiveness.Action

    enum Step {
        case sent(Int, at: Int, Action)
        case heard(Int, Action)
        case timeout(at: Int, Action)
        case connection(answered: Bool, Action)
        case suspected(Bool)
    }

    /// Times in milliseconds.
    static func run(_ steps: [Step], sourceLocation: SourceLocation = #_sourceLocation) {
        var liveness = ListenerLiveness(heartbeat: .seconds(2), suspectAfter: .seconds(1), deafAfter: .seconds(5))
        for (n, step) in steps.enumerated() {
            switch step {
            case .sent(let ping, let at, let expected):
                #expect(liveness.sent(ping, at: .milliseconds(at)) == expected, "step \(n)", sourceLocation: sourceLocation)
            case .heard(let ping, let expected):
                #expect(liveness.heard(ping) == expected, "step \(n)", sourceLocation: sourceLocation)
            case .timeout(let at, let expected):
                #expect(liveness.timeout(at: .milliseconds(at)) == expected, "step \(n)", sourceLocation: sourceLocation)
            case .connection(let answered, let expected):
                #expect(liveness.connection(answered: answered) == expected, "step \(n)", sourceLocation: sourceLocation)
            case .suspected(let expected):
                #expect(liveness.suspected == expected, "step \(n)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a ping heard in time: the next one a heartbeat after the last was sent, nothing suspected")
    func heardInTime() {
        Self.run([
            .sent(0, at: 0, .wait(until: .seconds(1))),
            .heard(0, .nextPing(at: .seconds(2), clearSuspicion: false)),
            .sent(1, at: 2000, .wait(until: .seconds(3))),
            // An older ping heard late changes nothing.
            .heard(0, .wait(until: .seconds(3))),
            .heard(1, .nextPing(at: .seconds(4), clearSuspicion: false)),
            .suspected(false),
        ])
    }

    @Test("unheard past 1 s: suspected; heard after all: the suspicion cleared with the next ping")
    func suspectedThenHeard() {
        Self.run([
            .sent(0, at: 0, .wait(until: .seconds(1))),
            .timeout(at: 1000, .suspect(waitUntil: .seconds(5))),
            .suspected(true),
            // A wait that ends early (its timer a resolution late or early) waits again, suspected once only.
            .timeout(at: 3000, .wait(until: .seconds(5))),
            .heard(0, .nextPing(at: .seconds(2), clearSuspicion: true)),
            .suspected(false),
        ])
    }

    @Test("unheard past 5 s: the connection is asked; one that answers is slow and stays suspected, one that does not is deaf")
    func deafOrSlow() {
        Self.run([
            .sent(0, at: 0, .wait(until: .seconds(1))),
            .timeout(at: 1010, .suspect(waitUntil: .seconds(5))),
            .timeout(at: 5010, .checkConnection),
            .connection(answered: true, .nextPing(at: .seconds(2), clearSuspicion: false)),
            .suspected(true),
            // Still suspected: the next ping waits for deafness, not for a second suspicion.
            .sent(1, at: 7000, .wait(until: .seconds(12))),
            .timeout(at: 12_000, .checkConnection),
            .connection(answered: false, .deaf),
        ])
    }

    @Test("a ping heard after a slow connection's check clears the suspicion")
    func slowThenHeard() {
        Self.run([
            .sent(0, at: 0, .wait(until: .seconds(1))),
            .timeout(at: 1000, .suspect(waitUntil: .seconds(5))),
            .timeout(at: 5000, .checkConnection),
            .connection(answered: true, .nextPing(at: .seconds(2), clearSuspicion: false)),
            .sent(1, at: 5100, .wait(until: .milliseconds(10_100))),
            .heard(1, .nextPing(at: .milliseconds(7100), clearSuspicion: true)),
            .suspected(false),
        ])
    }
}
