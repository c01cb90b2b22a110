/// Runs a client as an app's life wants it: live mode while the app is in the foreground and the network reachable,
/// unsent writes pushed (within a limit) when it goes to the background, live mode again at once when the network
/// comes back or changes (instead of at the end of a reconnect backoff). Feed it the app's phase and the network's reachability: on Apple
/// platforms the `syncLifecycle(_:)` view modifier does both (scene phase, `NWPathMonitor`); elsewhere call
/// `set(phase:)` and `set(reachable:)`. One per client.
public actor SyncLifecycle {
    /// Where the app is (SwiftUI's `ScenePhase`).
    public enum Phase: Sendable, Equatable {
        /// In the foreground, in use: live mode runs.
        case active
        /// Visible but not in use (the app switcher, a call's banner; usually brief): live mode runs as when active.
        case inactive
        /// In the background: live mode stops and unsent writes are pushed, within `flushLimit`.
        case background
    }

    public let client: SyncClient
    /// How long the push on entering the background may take: iOS suspends an app a few seconds after it leaves the
    /// foreground, and one stopped mid-push sends the rest at its next launch (a write that landed meanwhile is
    /// recognised, never applied twice).
    public let flushLimit: Duration
    /// The phase last set (`.background` until the first: nothing runs).
    public private(set) var phase = Phase.background
    /// The reachability last set (reachable until told otherwise).
    public private(set) var reachable = true

    public init(client: SyncClient, flushLimit: Duration = .seconds(4)) {
        self.client = client
        self.flushLimit = flushLimit
    }

    /// The app moved to `phase`.
    public func set(phase: Phase) async {
        guard phase != self.phase else { return }
        self.phase = phase
        await follow()
        if phase == .background { await flush() }
    }

    /// The network's path changed: reachable (`NWPath.status == .satisfied`) or not. Reachable again, or reachable
    /// while live mode is not connected (a new path: another Wi-Fi, cellular), live mode starts again now: it may be
    /// waiting out a backoff from the outage.
    public func set(reachable: Bool) async {
        let regained = reachable && (!self.reachable || !client.status.liveConnected)
        self.reachable = reachable
        if regained, phase != .background { await client.stopLive() }
        await follow()
    }

    /// Live mode on or off, as the phase and the network want it; again if they changed while it waited for live mode
    /// to stop (a call made meanwhile saw the state before that stop ended).
    private func follow() async {
        while true {
            let (phase, reachable) = (self.phase, self.reachable)
            if phase != .background, reachable {
                client.startLive()
            } else {
                await client.stopLive()
            }
            if phase == self.phase, reachable == self.reachable { return }
        }
    }

    /// Pushes unsent writes, for at most `flushLimit`: past it the push is cancelled and the writes left stay queued.
    private func flush() async {
        guard phase == .background, client.isSignedIn, reachable, client.status.pendingWrites > 0 else { return }
        let client = self.client
        _ = await SyncClient.first(within: flushLimit) { try? await client.push() }
    }
}
