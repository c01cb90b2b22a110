import Foundation

/// The replicas of every space of an account, kept current with one connection (`GET /changes?spaces=all`, protocol
/// §15).
///
/// An account in several spaces holds one replica file per space, a ``SyncClient`` each. Live mode would keep one
/// connection per space and learn that the account lost a space only when a sync answers 404. A `SpaceSet` follows
/// them all with one stream (``SyncClient/spaceEvents()``): ``follow()`` syncs a space's replica when the server says
/// the space is at another date than the replica, opens a replica for a space the account joins, and erases the
/// replica of a space no longer listed (as a sync answered 404 does), telling the app.
public final class SpaceSet: Sendable {
    /// What ``SpaceSet/follow()`` did, for the app to show or to remember.
    public enum Update: Sendable {
        /// The account's spaces and roles now (at each connection, then at each change of membership or role): the
        /// set follows all of them.
        case spaces([SpaceRoleInfo])
        /// A space's replica synced because the server said the space had moved.
        case synced(space: String, SyncReport)
        /// A space's sync failed, or its replica could not be opened or erased; tried again at the space's next
        /// change or listing (each connection of the stream sends them all).
        case syncFailed(space: String, any Error)
        /// The account is no longer in this space: the replica's data was erased and the set no longer holds it.
        case removed(space: String)
    }

    /// The account's client: it opens the stream, and it holds its own space (`configuration.space`, or the home
    /// space), which the set syncs but never erases.
    public let account: SyncClient
    private let replicaPath: @Sendable (String) -> String
    /// The clients the set opened, by space.
    private let held = Locked<[String: SyncClient]>([:])

    /// `replicaPath` says where the replica of a space lives (one file per space, not the account's). `holding` lists
    /// the spaces whose replicas the app kept from an earlier run: they are opened now, so that one the account lost
    /// meanwhile is erased at the stream's first listing.
    public init(account: SyncClient, holding spaces: [String] = [], replicaPath: @escaping @Sendable (_ space: String) -> String) throws {
        self.account = account
        self.replicaPath = replicaPath
        for space in spaces { _ = try client(forSpace: space) }
    }

    /// The client of a space: the account's for its own space, else the one the set holds, opened (and held) at first
    /// use with `account.client(forSpace:replicaPath:)`.
    public func client(forSpace space: String) throws -> SyncClient {
        if let client = existing(space) { return client }
        return try held.withLock { held in
            if let client = held[space] { return client }
            let client = try account.client(forSpace: space, replicaPath: replicaPath(space))
            held[space] = client
            return client
        }
    }

    /// The spaces the set holds a replica of, the account's own aside: what to pass as `holding` at the next launch.
    public var heldSpaces: [String] { held.withLock { Array($0.keys) }.sorted() }

    /// Follows the account's spaces until the iterating task is cancelled (call it once): each space's dates go to a
    /// task of its own that syncs the space's replica unless it is already at that date (the newest date only: a
    /// burst makes one sync; spaces sync side by side). Finishes throwing as ``SyncClient/spaceEvents()`` does:
    /// `SyncClientError.notSignedIn` once the session is gone.
    public func follow() -> AsyncThrowingStream<Update, any Error> {
        AsyncThrowingStream { updates in
            let task = Task {
                do {
                    try await run(updates)
                    updates.finish()
                } catch {
                    updates.finish(throwing: error)
                }
            }
            updates.onTermination = { _ in task.cancel() }
        }
    }

    private func run(_ updates: AsyncThrowingStream<Update, any Error>.Continuation) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inboxes: [String: AsyncStream<String>.Continuation] = [:]
            defer { for inbox in inboxes.values { inbox.finish() } }
            for try await event in account.spaceEvents() {
                switch event {
                case .changed(let space, let date):
                    if inboxes[space] == nil {
                        let (dates, inbox) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
                        inboxes[space] = inbox
                        group.addTask { for await date in dates { await self.catchUp(space, to: date, updates) } }
                    }
                    inboxes[space]?.yield(date)
                case .spaces(let listing):
                    updates.yield(.spaces(listing))
                    let listed = listing.map(\.id)
                    for space in heldSpaces where !listed.contains(space) {
                        inboxes.removeValue(forKey: space)?.finish()
                        await remove(space, updates)
                    }
                    for space in listed where existing(space) == nil {
                        do { _ = try client(forSpace: space) } catch { updates.yield(.syncFailed(space: space, error)) }
                    }
                }
            }
        }
    }

    /// The client of a space the set holds (the account's for its own space), without opening any.
    private func existing(_ space: String) -> SyncClient? {
        space == (account.configuration.space ?? account.currentSession?.familyID) ? account : held.withLock { $0[space] }
    }

    /// Syncs a space's replica unless it is at `date` already (single-flight: a sync the app runs is joined).
    private func catchUp(_ space: String, to date: String, _ updates: AsyncThrowingStream<Update, any Error>.Continuation) async {
        guard let client = existing(space), client.dateOfSync != date else { return }
        do {
            updates.yield(.synced(space: space, try await client.sync()))
        } catch SyncClientError.spaceRemoved(_) {
            // The sync's 404 found the space gone and erased the replica; told once, by whoever forgets the client.
            if held.withLock({ $0.removeValue(forKey: space) }) != nil { updates.yield(.removed(space: space)) }
        } catch {
            updates.yield(.syncFailed(space: space, error))
        }
    }

    /// Erases the replica of a space no longer listed as a sync answered 404 does (after a sync that runs: `reset()`),
    /// and forgets it.
    private func remove(_ space: String, _ updates: AsyncThrowingStream<Update, any Error>.Continuation) async {
        guard let client = held.withLock({ $0.removeValue(forKey: space) }) else { return }
        do {
            try await client.reset()
            updates.yield(.removed(space: space))
        } catch {
            // Held again: erased at the next listing.
            held.withLock { $0[space] = $0[space] ?? client }
            updates.yield(.syncFailed(space: space, error))
        }
    }
}
