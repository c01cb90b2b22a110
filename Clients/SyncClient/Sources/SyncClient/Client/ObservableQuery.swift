#if canImport(Observation)
import Observation

/// A query's items as an `@Observable` object for SwiftUI (iOS 17, macOS 14), kept on the main actor. Its first value
/// is read when it is made, so a view shows it on its first frame; it changes only when the query's rows do (a write to
/// other items of the collection, or to other collections, redraws nothing). Items that do not decode are in
/// `skipped`, never failing the list. Set `query` (a search field, another sort) and it reads again at once.
///
/// ```swift
/// @State private var smiths: ObservableQuery<Contact>
/// init(client: SyncClient) {
///     _smiths = State(initialValue: ObservableQuery(client, SyncQuery(Contact.self).filter("lastName", .equals, "Smith")))
/// }
/// var body: some View { List(smiths.items) { Text($0.firstName ?? "") } }
/// ```
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class ObservableQuery<M: SyncModel> {
    /// The items that decoded, in the query's order.
    public private(set) var items: [M] = []
    /// The items left out because they do not decode as `M`.
    public private(set) var skipped: [SkippedItem] = []
    /// Why the query could not be read (a field path it refuses, the replica closed), if it could not.
    public private(set) var error: SyncClientError?
    /// The query followed: setting it reads the new one at once and follows it instead.
    public var query: SyncQuery<M> {
        didSet { follow() }
    }
    @ObservationIgnored private let client: SyncClient
    @ObservationIgnored private let observation = FollowingTask()

    public init(_ client: SyncClient, _ query: SyncQuery<M>) {
        self.client = client
        self.query = query
        follow()
    }

    deinit {
        observation.replace(with: nil)
    }

    /// Reads the query now, then follows its changes (those after what was read).
    private func follow() {
        var seen: [QueryPlan.Match]?
        do {
            let (result, rows) = try client.fetchRows(query)
            (items, skipped, error, seen) = (result.items, result.skipped, nil, rows)
        } catch {
            self.error = .wrapping(error)
        }
        let updates = client.observe(query, after: seen)
        observation.replace(
            with: Task { [weak self] in
                do {
                    for try await result in updates {
                        guard let self else { return }
                        (self.items, self.skipped) = (result.items, result.skipped)
                    }
                } catch {
                    if !(error is CancellationError) { self?.error = .wrapping(error) }
                }
            })
    }
}

/// The task that follows an observation: replaced when the query changes, cancelled when its owner goes.
final class FollowingTask: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    func replace(with new: Task<Void, Never>?) {
        task.withLock { task in
            task?.cancel()
            task = new
        }
    }
}
#endif
