import Foundation
import GRDB

extension SyncClient {
    /// Loads the next page of a paginated list (threads, wall) or of a parent's children (messages of a thread,
    /// comments of a post), below what the replica holds, and returns whether the list is now complete (`nomore`).
    /// Resumable: the place comes from the replica, so an interrupted call is simply made again.
    @discardableResult
    public func loadMore(_ list: PagedList, parent: String? = nil) async throws -> Bool {
        let limits = try await limits()
        let pageSize = max(1, min(configuration.pageSize, limits.nbMax))
        let children = max(0, min(configuration.maxChildren, limits.maxChildren))
        let path: String
        switch list {
        case .threads, .wall:
            path = "/\(list.rawValue)"
        case .messages:
            guard let parent else { throw SyncClientError.invalid("messages need a thread id (parent)") }
            path = "/threads/\(SyncCollection.escape(parent))/messages"
        case .comments:
            guard let parent else { throw SyncClientError.invalid("comments need a post id (parent)") }
            path = "/wall/\(SyncCollection.escape(parent))/comments"
        }
        let last = try await replica.pool.read { db in try Replica.lastServerID(db, list.collection, parent: parent ?? "") }
        let answer = try await configuration.retryPolicy.run {
            var query = "nb=\(pageSize)"
            if list == .threads { query += "&maxmessages=\(children)" }
            if list == .wall { query += "&maxcomments=\(children)" }
            if let last { query += "&lastId=\(Self.queryEscape(last))" }
            return try await self.call("GET", "\(path)?\(query)")
        }
        guard answer.status == 200 else { throw SyncClientError.from(answer) }
        let page = try JSONDecoder().decode(PageAnswer.self, from: answer.body)
        let applied = try await replica.pool.write { db -> Bool in
            // A sync that ran meanwhile may have replaced the list (crop): a page below the old end would leave a
            // hole, so it is dropped and the app asks again.
            guard try Replica.lastServerID(db, list.collection, parent: parent ?? "") == last else { return false }
            try Replica.apply(db, list, parent: parent, page)
            return true
        }
        try refreshCounts()
        return applied ? page.nomore : hasAll(list, parent: parent)
    }
}
