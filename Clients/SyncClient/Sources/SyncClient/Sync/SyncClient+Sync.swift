import Foundation
import GRDB

extension SyncClient {
    /// Pushes unsent writes, then sends one `POST /group` with every sync of an app start from the stored date, and
    /// applies all the answers with the new date in one local transaction (the date never moves ahead of the data).
    /// One at a time: a call made while a sync runs joins it. Network errors, 429 and 503 are retried with backoff.
    @discardableResult
    public func sync() async throws -> SyncReport {
        try await flight.run { try await self.runSync() }
    }

    /// One sync, retried as the policy says; `fresh` lists are asked without a date (downloaded again whole) and
    /// `verifying` adds `GET /verify` to the same group.
    func runSync(fresh: Set<SyncCollection> = [], verifying: Bool = false) async throws -> SyncReport {
        statusCenter.update { $0.state = .syncing }
        do {
            let report = try await configuration.retryPolicy.run { try await self.syncOnce(fresh: fresh, verifying: verifying) }
            try refreshCounts()
            statusCenter.update {
                $0.state = .idle
                $0.lastSuccessfulSync = Date()
                $0.lastError = nil
            }
            return report
        } catch {
            try? refreshCounts()
            let sdkError = error as? SyncClientError
            statusCenter.update {
                if sdkError == .notSignedIn {
                    $0.state = .error("signed out")
                } else {
                    $0.state = sdkError?.isTransient == true ? .offline : .error("\(error)")
                }
                $0.lastError = "\(error)"
            }
            throw error
        }
    }

    private func syncOnce(fresh: Set<SyncCollection>, verifying: Bool) async throws -> SyncReport {
        guard isSignedIn else { throw SyncClientError.notSignedIn }
        var report = try await pushQueue()
        let limits = try await limits()
        let pageSize = max(1, min(configuration.pageSize, limits.nbMax))
        let children = max(0, min(configuration.maxChildren, limits.maxChildren))
        var requests = try await replica.pool.read { db in
            try Self.syncRequests(db, pageSize: pageSize, maxChildren: children, fresh: fresh)
        }
        if verifying { requests.append(try await verifyRequest()) }
        guard requests.count <= limits.groupMaxRequests else {
            throw SyncClientError.invalid("the server takes \(limits.groupMaxRequests) calls per group; a sync needs \(requests.count)")
        }
        let answers = try await group(requests)
        let applied = try await replica.pool.write { db in try Self.applySync(db, answers) }
        report.date = applied.date
        report.replaced = applied.replaced
        if verifying {
            guard let body = answers[SyncRequestID.verify]?.body, answers[SyncRequestID.verify]?.status == 200 else {
                throw answers[SyncRequestID.verify].map(SyncClientError.from) ?? .invalid("the group carried no verify answer")
            }
            report.verifyAnswer = try body.decode(VerifyAnswer.self)
        }
        return report
    }

    /// The sync calls of one group, from the replica's state: the stored date for every list (one date is valid for
    /// all), no date for a `fresh` list, nor for a paginated list the replica holds no item of (protocol §4), whose
    /// `lastId` is otherwise the last item it holds.
    static func syncRequests(_ db: Database, pageSize: Int, maxChildren: Int, fresh: Set<SyncCollection>) throws -> [SubRequest] {
        let date = try Replica.meta(db, MetaKey.date)
        func since(_ list: SyncCollection) -> String? { fresh.contains(list) ? nil : date }
        var requests: [SubRequest] = []
        for (id, endpoint, list) in [
            (SyncRequestID.contacts, "ctcsync", SyncCollection.contacts), (SyncRequestID.events, "evtsync", .events),
            (SyncRequestID.places, "plcsync", .places),
        ] {
            requests.append(SubRequest(id: id, method: "GET", url: "/api/v1/\(endpoint)" + (since(list).map { "?date=\(queryEscape($0))" } ?? "")))
        }
        for (id, endpoint, list, child) in [
            (SyncRequestID.threads, "msgsyncthread", SyncCollection.threads, "maxmessages"), (SyncRequestID.wall, "wallsync", .wall, "maxcomments"),
        ] {
            var query = "nb=\(pageSize)&\(child)=\(maxChildren)"
            if let date = since(list), let last = try Replica.lastServerID(db, list) {
                query += "&date=\(queryEscape(date))&lastId=\(queryEscape(last))"
            }
            requests.append(SubRequest(id: id, method: "GET", url: "/api/v1/\(endpoint)?\(query)"))
        }
        let family = since(.members)
        requests.append(
            SubRequest(id: SyncRequestID.family, method: "GET", url: "/api/v1/familysync" + (family.map { "?date=\(queryEscape($0))" } ?? "")))
        return requests
    }

    /// Applies the six sync answers and the new date, inside the caller's transaction. Throws (applying nothing) when
    /// one of them failed: the replica keeps its old consistent state.
    static func applySync(_ db: Database, _ answers: [String: SubResponse]) throws -> (date: String, replaced: [String]) {
        func body<T: Decodable>(_ id: String, _ type: T.Type) throws -> T {
            guard let answer = answers[id] else { throw SyncClientError.invalid("the group carried no answer \(id)") }
            guard answer.status == 200, let body = answer.body else { throw SyncClientError.from(answer) }
            do {
                return try body.decode(type)
            } catch {
                throw SyncClientError.server(status: 200, code: "invalid_answer", detail: "answer \(id) does not decode: \(error)")
            }
        }
        let contacts = try body(SyncRequestID.contacts, SyncAnswer.self)
        let events = try body(SyncRequestID.events, SyncAnswer.self)
        let places = try body(SyncRequestID.places, SyncAnswer.self)
        let threads = try body(SyncRequestID.threads, PagedSyncAnswer.self)
        let wall = try body(SyncRequestID.wall, PagedSyncAnswer.self)
        let family = try body(SyncRequestID.family, FamilySyncAnswer.self)
        let dates = Set([contacts.date, events.date, places.date, threads.date, wall.date, family.date])
        guard dates.count == 1 else {
            throw SyncClientError.server(status: 200, code: "invalid_answer", detail: "the group's answers carry different dates")
        }
        var replaced: [String] = []
        for (collection, answer) in [(SyncCollection.contacts, contacts), (.events, events), (.places, places)] {
            try Replica.apply(db, collection, answer)
            if !answer.sync { replaced.append(collection.rawValue) }
        }
        for (collection, answer) in [(SyncCollection.threads, threads), (.wall, wall)] {
            try Replica.apply(db, collection, answer)
            if !answer.sync || answer.crop { replaced.append(collection.rawValue) }
        }
        try Replica.apply(db, family)
        if !family.sync { replaced.append("family") }
        // The date moves with the data, in the same transaction, never ahead of it.
        try Replica.setMeta(db, MetaKey.date, contacts.date)
        return (contacts.date, replaced)
    }
}

/// The ids of the sub-requests of a sync group.
enum SyncRequestID {
    static let contacts = "c"
    static let events = "e"
    static let places = "p"
    static let threads = "t"
    static let wall = "w"
    static let family = "f"
    static let verify = "v"
}
