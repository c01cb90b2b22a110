#if canImport(Network)
import Dispatch
import Network

/// The device's network reachability from `NWPathMonitor`: true while a path is satisfied. The monitor stops when
/// the consumer stops iterating.
public enum NetworkReachability {
    public static func updates() -> AsyncStream<Bool> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let monitor = PathMonitor()
            monitor.monitor.pathUpdateHandler = { path in continuation.yield(path.status == .satisfied) }
            continuation.onTermination = { _ in monitor.monitor.cancel() }
            monitor.monitor.start(queue: DispatchQueue(label: "dev.syncapi.client.reachability"))
        }
    }

    /// The monitor, shared with the stream's termination handler (it is used from its own queue only).
    private final class PathMonitor: @unchecked Sendable {
        let monitor = NWPathMonitor()
    }
}
#endif

#if canImport(SwiftUI)
import SwiftUI

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
extension View {
    /// Runs `client` as the app's life wants it (`SyncLifecycle`): live mode while the scene is active, unsent
    /// writes pushed when it goes to the background, live again as soon as the network comes back.
    public func syncLifecycle(_ client: SyncClient) -> some View {
        modifier(SyncLifecycleModifier(client: client))
    }
}

/// One `SyncLifecycle` for the view's life (its state), fed the scene phase (a change cancels the previous phase's
/// work, e.g. a background push when the app comes back) and the reachability.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
private struct SyncLifecycleModifier: ViewModifier {
    @State private var lifecycle: SyncLifecycle
    @Environment(\.scenePhase) private var scenePhase

    init(client: SyncClient) {
        _lifecycle = State(initialValue: SyncLifecycle(client: client))
    }

    func body(content: Content) -> some View {
        content
            .task(id: scenePhase) { await lifecycle.set(phase: SyncLifecycle.Phase(scenePhase)) }
            #if canImport(Network)
        .task { for await reachable in NetworkReachability.updates() { await lifecycle.set(reachable: reachable) } }
            #endif
    }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
extension SyncLifecycle.Phase {
    init(_ phase: ScenePhase) {
        switch phase {
        case .active: self = .active
        case .background: self = .background
        default: self = .inactive
        }
    }
}
#endif
