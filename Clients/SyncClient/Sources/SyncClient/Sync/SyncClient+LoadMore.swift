import Foundation
import GRDB

extension SyncClient {
    /// Loads the next page of a paginated list (`GET /threads`) or of a parent's children
    /// (`GET /threads/{id}/messages`), below what the replica holds, and returns whether the list is now complete
    /// (`nomore`). Resumable: the place comes from the replica, so an interrupted call is simply made again.
    @discardableResult
    public func loadMore(_ list: SyncCollection, parent: String? = nil) async throws -> Bool {
        let limits = try await limits()
        let pageSize = max(1, min(configuration.pageSize, limits.nbMax))
        let children = max(0, min(configuration.maxChildren, limits.maxChildren))
        let layout = try await serverModel().require(list)
        var path: String
        switch layout.kind {
        case .paginated:
            path = "/\(list)?nb=\(pageSize)"
            if let child = layout.children { path += "&max\(child)=\(children)" }
        case .child:
            guard let parent, let parentList = layout.parent else { throw SyncClientError.invalid("\(list) need a parent's id (parent)") }
            path = "/\(parentList)/\(SyncCollection.escape(parent))/\(list)?nb=\(pageSize)"
        case .list, .singleton:
            throw SyncClientError.invalid("\(list) is not paginated: a sync brings it whole")
        }
        let last = try await replica.pool.read { db in try Replica.lastServerID(db, list, parent: parent ?? "") }
        let answer = try await configuration.retryPolicy.run { [path] in
            try await self.call("GET", path + (last.map { "&lastId=\(Self.queryEscape($0))" } ?? ""))
        }
        guard answer.status == 200 else { throw SyncClientError.from(answer) }
        let page = try JSONDecoder().decode(PageAnswer.self, from: answer.body)
        let applied = try await replica.pool.write { db -> Bool in
            // A sync that ran meanwhile may have replaced the list (crop): a page below the old end would leave a
            // hole, so it is dropped and the app asks again.
            guard try Replica.lastServerID(db, list, parent: parent ?? "") == last else { return false }
            try Replica.apply(db, layout, parent: parent, page)
            return true
        }
        try refreshCounts()
        return applied ? page.nomore : hasAll(list, parent: parent)
    }
}
