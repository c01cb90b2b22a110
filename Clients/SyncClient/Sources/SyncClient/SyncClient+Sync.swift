import Foundation
import GRDB

extension SyncClient {
    /// Pushes unsent writes, then one `POST /group` with every sync of an app start from the stored date, applied
    /// with the new date in one local transaction. One at a time: a concurrent call joins the running sync.
    @discardableResult
    public func sync() async throws -> SyncReport {
        try await flight.run { try await self.runSync(fresh: []) }
    }

    /// The lists a sync asks for; `fresh` ones without a date (re-downloaded whole, as after a failed verify).
    func syncRequests(fresh: Set<String>, limits: (groupMaxRequests: Int, nbMax: Int, maxChildren: Int)) async throws -> [SubRequest] {
        let pageSize = min(configuration.pageSize, limits.nbMax)
        let children = min(configuration.maxChildren, limits.maxChildren)
        return try await replica.pool.read { db in
            let date = try Replica.meta(db, "date")
            func since(_ list: String) -> String? { fresh.contains(list) ? nil : date }
            var requests: [SubRequest] = []
            for (id, endpoint, list) in [("c", "ctcsync", "contacts"), ("e", "evtsync", "events"), ("p", "plcsync", "places")] {
                requests.append(SubRequest(id: id, method: "GET", url: "/api/v1/\(endpoint)" + (since(list).map { "?date=\($0)" } ?? "")))
            }
            for (id, endpoint, list, child) in [
                ("t", "msgsyncthread", SyncCollection.threads, "maxmessages"), ("w", "wallsync", .wall, "maxcomments"),
            ] {
                var query = "nb=\(pageSize)&\(child)=\(children)"
                // A client that holds no item of the list sends no date (protocol §4).
                if let date = since(list.rawValue), let last = try Replica.lastServerID(db, list) {
                    query += "&date=\(date)&lastId=\(Self.queryEscape(last))"
                }
                requests.append(SubRequest(id: id, method: "GET", url: "/api/v1/\(endpoint)?\(query)"))
            }
            requests.append(SubRequest(id: "f", method: "GET", url: "/api/v1/familysync" + (since("members").map { "?date=\($0)" } ?? "")))
            return requests
        }
    }

    static func queryEscape(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(.init(charactersIn: "-._~"))) ?? value
    }

    /// Applies the six sync answers and the new date in one transaction.
    static func applySync(_ db: Database, _ answers: [String: SubResponse]) throws -> String? {
        for id in ["c", "e", "p", "t", "w", "f"] {
            guard let answer = answers[id], answer.status == 200 else {
                let status = answers[id]?.status ?? 0
                throw SyncClientError.server(
                    status: status, code: answers[id]?.body["code"]?.stringValue ?? "no_answer", detail: "sync \(id) answered \(status)")
            }
        }
        try Replica.applyFullList(db, .contacts, answers["c"]!.body)
        try Replica.applyFullList(db, .events, answers["e"]!.body)
        try Replica.applyFullList(db, .places, answers["p"]!.body)
        try Replica.applyPaginated(db, .threads, answers["t"]!.body)
        try Replica.applyPaginated(db, .wall, answers["w"]!.body)
        try Replica.applyFamily(db, answers["f"]!.body)
        let date = answers["c"]!.body["date"]?.stringValue
        // The date moves with the data, never ahead of it.
        try Replica.setMeta(db, "date", date)
        return date
    }

    func runSync(fresh: Set<String>, extra: [SubRequest] = []) async throws -> SyncReport {
        statusCenter.update { $0.state = .syncing }
        do {
            var report = SyncReport()
            (report.pushed, report.failed) = try await pushQueue()
            let limits = try await limits()
            let requests = try await syncRequests(fresh: fresh, limits: limits) + extra
            let answers = try await group(requests)
            report.date = try await replica.pool.write { db in try Self.applySync(db, answers) }
            for request in extra { report.extras[request.id] = answers[request.id]?.body }
            try refreshCounts()
            statusCenter.update {
                $0.state = .idle
                $0.lastSuccessfulSync = Date()
                $0.lastError = nil
            }
            return report
        } catch {
            if error as? SyncClientError == .notSignedIn { sessionEnded() }
            let transient = (error as? SyncClientError)?.isTransient ?? false
            statusCenter.update {
                $0.state = transient ? .offline : .error("\(error)")
                $0.lastError = "\(error)"
            }
            throw error
        }
    }

    /// Loads the next page of a paginated list or of a parent's children, below what the replica holds, and
    /// returns whether the list is now complete (`nomore`). Resumable: the place comes from the replica.
    @discardableResult
    public func loadMore(_ list: PagedList, parent: String? = nil) async throws -> Bool {
        let limits = try await limits()
        let pageSize = min(configuration.pageSize, limits.nbMax)
        let path: String
        switch list {
        case .threads, .wall:
            path = "/\(list.rawValue)"
        case .messages:
            guard let parent else { throw SyncClientError.invalid("messages need a thread id") }
            path = "/threads/\(SyncCollection.escape(parent))/messages"
        case .comments:
            guard let parent else { throw SyncClientError.invalid("comments need a post id") }
            path = "/wall/\(SyncCollection.escape(parent))/comments"
        }
        let last = try await replica.pool.read { db in try Replica.lastServerID(db, list.collection, parent: parent ?? "") }
        var query = "nb=\(pageSize)"
        if list == .threads { query += "&maxmessages=\(min(configuration.maxChildren, limits.maxChildren))" }
        if list == .wall { query += "&maxcomments=\(min(configuration.maxChildren, limits.maxChildren))" }
        if let last { query += "&lastId=\(Self.queryEscape(last))" }
        let answer = try await call("GET", "\(path)?\(query)")
        guard answer.status == 200, let json = answer.json else { throw SyncClientError.from(answer) }
        try await replica.pool.write { db in try Replica.applyPage(db, list, parent: parent, json) }
        try refreshCounts()
        return json["nomore"]?.boolValue ?? false
    }
}
