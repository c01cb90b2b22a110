import Foundation

/// Keeps the current status and hands every change to every listener.
final class StatusCenter: Sendable {
    private let state = Locked<(status: SyncStatus, listeners: [UUID: AsyncStream<SyncStatus>.Continuation])>((SyncStatus(), [:]))

    var current: SyncStatus { state.withLock { $0.status } }

    func update(_ change: (inout SyncStatus) -> Void) {
        let (status, listeners) = state.withLock { state -> (SyncStatus, [AsyncStream<SyncStatus>.Continuation]) in
            let before = state.status
            change(&state.status)
            return (state.status, state.status == before ? [] : Array(state.listeners.values))
        }
        for listener in listeners { listener.yield(status) }
    }

    func updates() -> AsyncStream<SyncStatus> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(8))
        let current = state.withLock { state -> SyncStatus in
            state.listeners[id] = continuation
            return state.status
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        return stream
    }
}
