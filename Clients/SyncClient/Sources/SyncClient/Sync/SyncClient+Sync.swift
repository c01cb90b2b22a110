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
        // The group's answer is applied while it downloads (issue 18): read piece by piece inside the one write
        // transaction, each item stored as it arrives, so a first sync of 100,000 contacts never holds its answer.
        let pipe = try await download("POST", "/group", body: try JSONValue(encoding: GroupRequest(requests: requests)))
        defer { pipe.cancel() }
        let applied: StreamedSync
        do {
            applied = try await replica.pool.write { db in
                var reader = JSONByteReader {
                    do {
                        return try pipe.next()
                    } catch {
                        throw SyncClientError.offline("the answer stopped midway: \(error.localizedDescription)")
                    }
                }
                return try Self.applyStreamedSync(db, &reader)
            }
        } catch is SubAnswerUnauthorized {
            sessionEnded()
            throw SyncClientError.notSignedIn
        }
        replica.checkpointSoon()
        report.date = applied.date
        report.replaced = applied.replaced
        if verifying {
            let verify = applied.others[SyncRequestID.verify]
            guard let body = verify?.body, verify?.status == 200 else {
                throw verify.map(SyncClientError.from) ?? .invalid("the group carried no verify answer")
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

/// What a sync group's answer applied while it downloaded: the new date, the lists it replaced, and the answers
/// that are not sync answers (verify), by id.
struct StreamedSync: Sendable {
    var date: String
    var replaced: [String]
    var others: [String: SubResponse]
}

/// A sub-answer of the group was 401: the session is gone (thrown out of the transaction, which applies nothing).
struct SubAnswerUnauthorized: Error {}

extension SyncClient {
    /// Applies a sync group's answer (`{"responses": [{"id", "status", "headers", "body"}, …]}`) as `reader` reads
    /// it, inside the caller's transaction, with the same result as `applySync`: the full lists (contacts, events,
    /// places) are applied as their items arrive; the paginated lists and the family, bounded by their page sizes,
    /// are decoded whole and applied after them; then the dates are checked and the new date stored. Throws
    /// (applying nothing) when an answer failed or does not decode; once one failed, the bodies after it are only
    /// skipped.
    static func applyStreamedSync(_ db: Database, _ reader: inout JSONByteReader) throws -> StreamedSync {
        // Each collection's stamp moves once, at its first row, not once per row (an update per row cost about 0.5 s
        // per 100,000 rows, by the helper's measurement); collections the sync leaves alone do not move.
        try Replica.beginBulkStamps(db)
        let result = try applyStreamedSyncRows(db, &reader)
        try Replica.endBulkStamps(db)
        return result
    }

    private static func applyStreamedSyncRows(_ db: Database, _ reader: inout JSONByteReader) throws -> StreamedSync {
        let fullLists = [SyncRequestID.contacts: SyncCollection.contacts, SyncRequestID.events: .events, SyncRequestID.places: .places]
        let syncIDs: Set<String> = [
            SyncRequestID.contacts, SyncRequestID.events, SyncRequestID.places, SyncRequestID.threads, SyncRequestID.wall, SyncRequestID.family,
        ]
        var streamed: [String: (date: String, sync: Bool)] = [:]
        var paged: [String: PagedSyncAnswer] = [:]
        var family: FamilySyncAnswer?
        var held: [String: SubResponse] = [:]
        var failed = false
        do {
            var sawResponses = false
            try reader.beginObject()
            var firstKey = true
            while let key = try reader.nextKey(&firstKey) {
                guard key == "responses", !sawResponses else {
                    try reader.skipValue()
                    continue
                }
                sawResponses = true
                try reader.beginArray()
                var firstResponse = true
                while try reader.nextElement(&firstResponse) {
                    var id: String?
                    var status: Int?
                    var headers: [String: String]?
                    var body: JSONValue?
                    var used = false
                    try reader.beginObject()
                    var firstMember = true
                    while let key = try reader.nextKey(&firstMember) {
                        switch key {
                        case "id": id = try reader.readString()
                        case "status": status = try reader.readInt()
                        case "headers": headers = try reader.consumeNull() ? nil : try reader.decode([String: String].self)
                        case "body":
                            guard let id, status == 200, syncIDs.contains(id) else {
                                // An error, another call (verify), or a body before its id: kept whole, as `group` does.
                                body = try reader.readValue()
                                if body == .null { body = nil }
                                continue
                            }
                            // A null body is kept (as nil): the error it stands for is thrown below.
                            if try reader.consumeNull() { continue }
                            used = true
                            if failed {
                                try reader.skipValue()
                                continue
                            }
                            do {
                                if let collection = fullLists[id] {
                                    streamed[id] = try Replica.applyStreamed(db, collection, &reader)
                                } else if id == SyncRequestID.family {
                                    family = try reader.decode(FamilySyncAnswer.self)
                                } else {
                                    paged[id] = try reader.decode(PagedSyncAnswer.self)
                                }
                            } catch let error as SyncClientError where error.isTransient {
                                throw error
                            } catch {
                                throw SyncClientError.invalidAnswer("answer \(id) does not decode: \(error)")
                            }
                        default: try reader.skipValue()
                        }
                    }
                    guard let id, let status else { throw SyncClientError.invalidAnswer("a group response without id or status") }
                    if status == 401 { throw SubAnswerUnauthorized() }
                    if !used {
                        held[id] = SubResponse(id: id, status: status, headers: headers, body: body)
                        if syncIDs.contains(id) { failed = true }
                    }
                }
            }
            guard sawResponses, try reader.atEnd() else { throw SyncClientError.invalidAnswer("the group answer is not {\"responses\": […]}") }
        } catch let error as SyncClientError {
            throw error
        } catch let error as SubAnswerUnauthorized {
            throw error
        } catch {
            throw SyncClientError.invalidAnswer("the group answer does not decode: \(error)")
        }

        /// The decoded answer `id`, or the error it stands for.
        func answer<T: Decodable>(_ id: String, _ decoded: T?) throws -> T {
            if let decoded { return decoded }
            guard let response = held[id] else { throw SyncClientError.invalid("the group carried no answer \(id)") }
            guard response.status == 200, let body = response.body else { throw SyncClientError.from(response) }
            do {
                return try body.decode(T.self)
            } catch {
                throw SyncClientError.invalidAnswer("answer \(id) does not decode: \(error)")
            }
        }
        var dates: [String] = []
        var replaced: [String] = []
        for (id, collection) in [(SyncRequestID.contacts, SyncCollection.contacts), (SyncRequestID.events, .events), (SyncRequestID.places, .places)]
        {
            if let list = streamed[id] {
                dates.append(list.date)
                if !list.sync { replaced.append(collection.rawValue) }
            } else {
                // Not streamed (an answer before its id, say): applied whole, as `applySync` does.
                let list = try answer(id, SyncAnswer?.none)
                try Replica.apply(db, collection, list)
                dates.append(list.date)
                if !list.sync { replaced.append(collection.rawValue) }
            }
        }
        let threads = try answer(SyncRequestID.threads, paged[SyncRequestID.threads])
        let wall = try answer(SyncRequestID.wall, paged[SyncRequestID.wall])
        let familyAnswer = try answer(SyncRequestID.family, family)
        dates += [threads.date, wall.date, familyAnswer.date]
        guard Set(dates).count == 1 else { throw SyncClientError.invalidAnswer("the group's answers carry different dates") }
        for (collection, list) in [(SyncCollection.threads, threads), (.wall, wall)] {
            try Replica.apply(db, collection, list)
            if !list.sync || list.crop { replaced.append(collection.rawValue) }
        }
        try Replica.apply(db, familyAnswer)
        if !familyAnswer.sync { replaced.append("family") }
        // The date moves with the data, in the same transaction, never ahead of it.
        try Replica.setMeta(db, MetaKey.date, dates[0])
        return StreamedSync(date: dates[0], replaced: replaced, others: held.filter { !syncIDs.contains($0.key) })
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
