#if canImport(Observation)
import Observation

/// The client's status as an `@Observable` object for SwiftUI (iOS 17, macOS 14): a view that reads
/// `syncStatus.status.pendingWrites` redraws when it changes, with no `.task` loop. Kept on the main actor.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class ObservableSyncStatus {
    /// The latest status (`SyncClient.status`).
    public private(set) var status: SyncStatus

    /// Follows `client.statusUpdates` until this object goes away.
    public init(_ client: SyncClient) {
        status = client.status
        let updates = client.statusUpdates
        Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                self.status = status
            }
        }
    }
}

/// The items of one collection as an `@Observable` object for SwiftUI (iOS 17, macOS 14): redrawn after a sync
/// or a local write changes what the query reads, decoded as `M`.
///
/// ```swift
/// @State private var contacts = LiveQuery(client, Contact.self)
/// var body: some View { List(contacts.items) { Text($0.firstName ?? "") } }
/// ```
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class LiveQuery<M: SyncModel> {
    /// The items, in the replica's order for the collection.
    public private(set) var items: [M] = []
    /// The last error of the observation (the replica closed), if any.
    public private(set) var error: SyncClientError?

    public init(_ client: SyncClient, _ type: M.Type, parent: String? = nil) {
        items = (try? client.all(M.self, parent: parent)) ?? []
        let values = client.observeAll(M.self, parent: parent)
        Task { [weak self] in
            do {
                for try await value in values {
                    guard let self else { return }
                    self.items = value
                }
            } catch {
                self?.error = .invalid("\(error)")
            }
        }
    }
}
#endif
