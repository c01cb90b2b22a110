import Foundation
import GRDB
import Logging

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
        let started = ContinuousClock.now
        do {
            let report = try await configuration.retryPolicy.run { try await self.syncOnce(fresh: fresh, verifying: verifying) }
            try refreshCounts()
            log.sync.info(
                "sync finished",
                metadata: [
                    "date": "\(report.date ?? "")", "pushed": "\(report.pushed)", "failed": "\(report.failed)",
                    "conflicts": "\(report.conflicts)", "replaced": "\(report.replaced.joined(separator: ","))",
                    "ms": "\((ContinuousClock.now - started).wholeMilliseconds)",
                ])
            statusCenter.update {
                $0.state = .idle
                $0.lastSuccessfulSync = Date()
                $0.lastError = nil
            }
            return report
        } catch {
            let error = await spaceRemoval(error)
            try? refreshCounts()
            let sdkError = SyncClientError.wrapping(error)
            log.sync.log(level: sdkError.isTransient ? .notice : .warning, "sync failed", metadata: sdkError.logMetadata)
            statusCenter.update {
                $0.state = sdkError.isTransient ? .offline : .error(sdkError)
                $0.lastError = sdkError
            }
            throw error
        }
    }

    private func syncOnce(fresh: Set<SyncCollection>, verifying: Bool) async throws -> SyncReport {
        guard isSignedIn else { throw SyncClientError.notSignedIn }
        var report = try await pushQueue()
        let model = try await serverModel()
        let endpoints = model.endpoints
        // The kept limits first; read again (once) when they say the group does not fit, or when the server refuses
        // it for its size (an operator changed them since).
        var limits = try await limits()
        var refreshed = false
        let answer: AsyncThrowingStream<Data, any Error>
        while true {
            let pageSize = max(1, min(configuration.pageSize, limits.nbMax))
            let children = max(0, min(configuration.maxChildren, limits.maxChildren))
            var requests = try await replica.pool.read { db in
                try Self.syncRequests(db, endpoints, pageSize: pageSize, maxChildren: children, fresh: fresh)
            }
            if verifying { requests.append(try await verifyRequest(endpoints)) }
            if requests.count > limits.groupMaxRequests, !refreshed {
                refreshed = true
                log.sync.notice("limits read again: the sync needs more calls than a group takes", metadata: ["calls": "\(requests.count)"])
                limits = try await self.limits(refresh: true)
                continue
            }
            guard requests.count <= limits.groupMaxRequests else {
                throw SyncClientError.invalid("the server takes \(limits.groupMaxRequests) calls per group; a sync needs \(requests.count)")
            }
            do {
                answer = try await download("POST", "/group", body: try JSONValue(encoding: GroupRequest(requests: requests.map(inSpace))))
                break
            } catch let error as SyncClientError where error.refusesGroupSize && !refreshed {
                refreshed = true
                log.sync.notice("limits read again: the server refused the group's size", metadata: error.logMetadata)
                limits = try await self.limits(refresh: true)
            }
        }
        // The answer is read while it downloads, without the replica: each replaced list's rows gathered in a staging
        // database of the sync's own (`StagingArea`), everything else kept as read. The replica's writer is held for the
        // apply alone, once the answer is whole: a save made while a long sync downloads goes through, readers see the
        // replica before the sync or after it, and a download cut midway leaves nothing behind. A first sync of
        // 1,000,000 contacts never holds its answer in memory. An answer that ends before `syncStagingThreshold` bytes
        // (a delta) is read by the apply itself, from its file, as one step (no thread to hand it over to).
        let downloadStarted = ContinuousClock.now
        let spool = try AnswerSpool(path: AnswerSpool.newPath(replicaPath: configuration.replicaPath), protection: configuration.fileProtection)
        let stagingPath = spool.path + ".staging"
        defer { StagingArea.remove(stagingPath) }
        let staged: StagedSync?
        let downloaded: ContinuousClock.Instant
        do {
            (staged, downloaded) = try await Self.stageWhileDownloading(
                answer, spool, limit: configuration.syncAnswerMaxBytes, threshold: configuration.syncStagingThreshold, endpoints: endpoints,
                staging: stagingPath, protection: configuration.fileProtection, valueLimit: configuration.answerMaxBytes)
        } catch is SubAnswerUnauthorized {
            sessionEnded()
            throw SyncClientError.notSignedIn
        }
        let applyStarted = ContinuousClock.now
        // A cancelled sync stops its apply (GRDB interrupts the statement): the transaction applies nothing.
        let applied: StreamedSync
        do {
            if let staged {
                applied = try await replica.pool.writeWithoutTransaction { db in try Self.applyStaged(db, endpoints, staged) }
            } else {
                let valueLimit = configuration.answerMaxBytes
                applied = try await replica.pool.write { db in
                    var reader = JSONByteReader(valueLimit: valueLimit) { try spool.next() }
                    return try Self.applyStreamedSync(db, endpoints, &reader)
                }
            }
        } catch is SubAnswerUnauthorized {
            sessionEnded()
            throw SyncClientError.notSignedIn
        }
        // Where a sync's time goes: the answer's download (the server's work and the network), its staging (read as it
        // downloads: what is left of it after the last byte), then its apply (the replica's writer held).
        log.sync.debug(
            "sync answer applied",
            metadata: [
                "downloadMs": "\((downloaded - downloadStarted).milliseconds)",
                "stagedMs": "\((applyStarted - downloadStarted).milliseconds)",
                "applyMs": "\((ContinuousClock.now - applyStarted).milliseconds)",
            ])
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

    /// The sync calls of one group, one per sync endpoint of the model (its name is the call's id), from the
    /// replica's state: the stored date (one date is valid for all), no date for a `fresh` collection nor for one the
    /// stored date does not cover (`MetaKey.synced`: the server added it since), nor for a paginated list the replica
    /// holds no item of (protocol §4), whose `lastId` is otherwise the last item it holds.
    static func syncRequests(
        _ db: Database, _ endpoints: [SyncEndpoint], pageSize: Int, maxChildren: Int, fresh: Set<SyncCollection>
    ) throws -> [SubRequest] {
        let date = try Replica.meta(db, MetaKey.date)
        let synced = Set((try Replica.meta(db, MetaKey.synced) ?? "").split(separator: ",").map { SyncCollection(String($0)) })
        var requests: [SubRequest] = []
        for endpoint in endpoints {
            let covered = endpoint.members.allSatisfy { member in
                !fresh.contains(member.name) && synced.contains(member.name) && member.children.map(synced.contains) != false
            }
            let since = covered ? date : nil
            switch endpoint.shape {
            case .list, .bundle:
                requests.append(
                    SubRequest(
                        id: endpoint.name, method: "GET", url: "/api/v1/\(endpoint.name)" + (since.map { "?date=\(queryEscape($0))" } ?? "")))
            case .paginated(let list):
                var query = "nb=\(pageSize)"
                if let child = list.children { query += "&max\(child)=\(maxChildren)" }
                if let since, let last = try Replica.lastServerID(db, list.name) {
                    query += "&date=\(queryEscape(since))&lastId=\(queryEscape(last))"
                }
                requests.append(SubRequest(id: endpoint.name, method: "GET", url: "/api/v1/\(endpoint.name)?\(query)"))
            }
        }
        return requests
    }

    /// Applies the sync answers (by endpoint name) and the new date, inside the caller's transaction: the reference
    /// for `applyStreamedSync`. Throws (applying nothing) when one of them failed: the replica keeps its old
    /// consistent state.
    static func applySync(_ db: Database, _ endpoints: [SyncEndpoint], _ answers: [String: SubResponse]) throws -> (date: String, replaced: [String])
    {
        var decoded: [String: JSONValue] = [:]
        for endpoint in endpoints {
            guard let answer = answers[endpoint.name] else { throw SyncClientError.invalid("the group carried no answer \(endpoint.name)") }
            guard answer.status == 200, let body = answer.body else { throw SyncClientError.from(answer) }
            decoded[endpoint.name] = body
        }
        var dates: [String] = []
        var replaced: [String] = []
        for endpoint in endpoints {
            let (date, lists) = try apply(db, endpoint, decoded[endpoint.name]!)
            dates.append(date)
            replaced += lists
        }
        guard let date = dates.first, Set(dates).count == 1 else {
            throw SyncClientError.invalidAnswer("the group's answers carry different dates")
        }
        try recordSynced(db, endpoints, date: date)
        return (date, replaced)
    }

    /// Applies one endpoint's whole answer; its date and the collections it replaced.
    static func apply(_ db: Database, _ endpoint: SyncEndpoint, _ body: JSONValue) throws -> (date: String, replaced: [String]) {
        do {
            switch endpoint.shape {
            case .list(let list):
                let answer = try SyncAnswer(parsed: body)
                try Replica.apply(db, list, answer)
                return (answer.date, answer.sync ? [] : [list.name.rawValue])
            case .paginated(let list):
                let answer = try PagedSyncAnswer(parsed: body)
                try Replica.apply(db, list, answer)
                return (answer.date, answer.sync && !answer.crop ? [] : [list.name.rawValue])
            case .bundle(let members):
                guard let object = body.objectValue else { throw SyncClientError.invalidAnswer("answer \(endpoint.name) is not an object") }
                let (date, sync) = try Replica.applyBundle(db, members, object)
                return (date, sync ? [] : members.map(\.name.rawValue))
            }
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw SyncClientError.invalidAnswer("answer \(endpoint.name) does not decode: \(error)")
        }
    }

    /// The date moves with the data, in the same transaction, never ahead of it; with it, the collections it covers,
    /// and the held count of each list the answers replaced.
    static func recordSynced(_ db: Database, _ endpoints: [SyncEndpoint], date: String) throws {
        try Replica.recountHeld(db, endpoints.flatMap(\.members).map(\.name))
        var names = Set<String>()
        for member in endpoints.flatMap(\.members) {
            names.insert(member.name.rawValue)
            if let child = member.children { names.insert(child.rawValue) }
        }
        try Replica.setMeta(db, MetaKey.date, date)
        try Replica.setMeta(db, MetaKey.synced, names.sorted().joined(separator: ","))
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

/// A sync group's answer as read while it downloads (`SyncClient.stage`), not yet applied: the list answers read item
/// by item (a replaced list's rows in the staging database), the other answers whole, and those that are not sync
/// answers or failed.
struct StagedSync: Sendable {
    /// The list answers, in the answer's order, by call id.
    var lists: [(id: String, list: Replica.StagedList)] = []
    /// Paginated lists and bundles (bounded by `answerMaxBytes` each), and a list whose body came before its id.
    var whole: [String: JSONValue] = [:]
    /// Answers not applied as sync answers: errors, and the calls that are not syncs (verify).
    var held: [String: SubResponse] = [:]
    /// The staging database holding the replaced lists' rows (nil: none was replaced).
    var stagingPath: String?
}

extension SyncClient {
    /// Applies a sync group's answer (`{"responses": [{"id", "status", "headers", "body"}, …]}`) as `reader` reads
    /// it, inside the caller's transaction, with the same result as `applySync`: the answer is staged (`stage`, in
    /// temporary tables of the same connection), then applied (`applyStaged`). Throws (applying nothing) when an
    /// answer failed or does not decode.
    static func applyStreamedSync(_ db: Database, _ endpoints: [SyncEndpoint], _ reader: inout JSONByteReader) throws -> StreamedSync {
        let staging = StagingArea.temporary(db)
        let staged = try stage(endpoints, &reader, staging)
        let result = try applyStaged(db, endpoints, staged, schema: staging.schema)
        try staging.close()
        return result
    }

    /// Downloads a sync group's answer into `spool` (at most `limit` bytes) and, once it reaches `threshold` bytes (a
    /// thread would cost a shorter answer more than it saves), reads it while it downloads, on a thread of its own,
    /// staging replaced lists in a database at `path` (created only if one is): what the apply needs (nil for a
    /// shorter answer, whole in `spool`), and when the last byte came. Throws the download's failure if it failed (the
    /// staging then stops, and leaves its files for the caller to remove), else the staging's (the download then stops).
    static func stageWhileDownloading(
        _ body: AsyncThrowingStream<Data, any Error>, _ spool: AnswerSpool, limit: Int, threshold: Int, endpoints: [SyncEndpoint],
        staging path: String, protection: ReplicaFileProtection?, valueLimit: Int
    ) async throws -> (StagedSync?, downloaded: ContinuousClock.Instant) {
        var staging: Task<StagedSync, any Error>?
        var failure: (any Error)?
        do {
            try await spool.download(body, limit: limit) { size in
                guard staging == nil, size >= threshold else { return }
                staging = Task.detached {
                    try await onThread {
                        let staging = StagingArea.file(path, protection: protection)
                        do {
                            var reader = JSONByteReader(valueLimit: valueLimit) { try spool.next() }
                            var staged = try stage(endpoints, &reader, staging)
                            try staging.close()
                            staged.stagingPath = staging.path
                            return staged
                        } catch {
                            spool.abandon()
                            try? staging.close()
                            throw error
                        }
                    }
                }
            }
        } catch {
            failure = error
        }
        let downloaded = ContinuousClock.now
        guard let staging else {
            if let failure { throw failure }
            return (nil, downloaded)
        }
        do {
            let staged = try await staging.value
            if let failure { throw failure }
            return (staged, downloaded)
        } catch {
            if let failure, !(failure is AnswerSpool.Abandoned) { throw failure }
            throw error
        }
    }

    /// Runs `body` on a thread of its own (it blocks while it waits for the download), not on the concurrency pool.
    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result(catching: body)) }
            thread.name = "SyncClient.stage"
            thread.start()
        }
    }

    /// Reads a sync group's answer (`{"responses": [{"id", "status", "headers", "body"}, …]}`) as `reader` reads it,
    /// without the replica: the list answers item by item (`Replica.stageStreamed`: a replaced list's rows go to
    /// `staging`), the paginated lists (bounded by their page sizes) and the bundles (whose lists are not, so
    /// `answerMaxBytes` bounds them) whole. Throws when the answer does not decode, or a sub-answer is 401; once a
    /// sync answer failed, the bodies after it are only skipped.
    static func stage(_ endpoints: [SyncEndpoint], _ reader: inout JSONByteReader, _ staging: StagingArea) throws -> StagedSync {
        var lists: [String: ServerModel.Collection] = [:]
        for endpoint in endpoints {
            if case .list(let list) = endpoint.shape { lists[endpoint.name] = list }
        }
        let syncIDs = Set(endpoints.map(\.name))
        var staged = StagedSync()
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
                            // A null body is kept (as nil): the error it stands for is thrown by the apply.
                            if try reader.consumeNull() { continue }
                            used = true
                            if failed {
                                try reader.skipValue()
                                continue
                            }
                            do {
                                if let list = lists[id] {
                                    staged.lists.append((id, try Replica.stageStreamed(list, &reader, staging)))
                                } else {
                                    staged.whole[id] = try reader.readValue()
                                }
                            } catch let error as SyncClientError where error.isTransient || error.isAnswerTooLarge {
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
                        staged.held[id] = SubResponse(id: id, status: status, headers: headers, body: body)
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
        return staged
    }

    /// Applies a staged answer in one transaction of `db` (the replica's writer, outside any transaction), the staging
    /// database attached meanwhile.
    static func applyStaged(_ db: Database, _ endpoints: [SyncEndpoint], _ staged: StagedSync) throws -> StreamedSync {
        var result: StreamedSync?
        if let path = staged.stagingPath {
            try db.execute(sql: "ATTACH DATABASE ? AS \(StagingArea.attachedSchema)", arguments: [path])
        }
        defer {
            if staged.stagingPath != nil { try? db.execute(sql: "DETACH DATABASE \(StagingArea.attachedSchema)") }
        }
        try db.inTransaction(.immediate) {
            result = try applyStaged(db, endpoints, staged, schema: StagingArea.attachedSchema)
            return .commit
        }
        return result!
    }

    /// Applies a staged answer inside the caller's transaction, with the same result as `applySync`; a replaced list's
    /// rows are read from `schema`. Every answer is checked before anything is applied: a failed call applies
    /// nothing. Then the dates are checked and the new date stored.
    static func applyStaged(_ db: Database, _ endpoints: [SyncEndpoint], _ staged: StagedSync, schema: String) throws -> StreamedSync {
        let syncIDs = Set(endpoints.map(\.name))
        /// The body of answer `id`, or the error it stands for.
        func body(_ id: String) throws -> JSONValue {
            if let decoded = staged.whole[id] { return decoded }
            guard let response = staged.held[id] else { throw SyncClientError.invalid("the group carried no answer \(id)") }
            guard response.status == 200, let body = response.body else { throw SyncClientError.from(response) }
            return body
        }
        if let failure = staged.held.values.filter({ syncIDs.contains($0.id) && ($0.status != 200 || $0.body == nil) }).first {
            throw SyncClientError.from(failure)
        }
        let streamed = Dictionary(staged.lists.map { ($0.id, $0.list) }, uniquingKeysWith: { _, last in last })
        for endpoint in endpoints where streamed[endpoint.name] == nil { _ = try body(endpoint.name) }
        // Each collection's stamp moves once, at its first row, not once per row (an update per row cost about 0.5 s
        // per 100,000 rows, by the helper's measurement); collections the sync leaves alone do not move.
        try Replica.beginBulkStamps(db)
        for (_, list) in staged.lists { try Replica.applyStaged(db, list, schema: schema) }
        var dates: [String] = []
        var replaced: [String] = []
        for endpoint in endpoints {
            if let list = streamed[endpoint.name] {
                dates.append(list.date)
                if !list.sync { replaced.append(endpoint.members[0].name.rawValue) }
            } else {
                // Paginated lists and bundles, and a list not streamed (an answer before its id, say): applied whole.
                let (date, lists) = try apply(db, endpoint, try body(endpoint.name))
                dates.append(date)
                replaced += lists
            }
        }
        guard let date = dates.first, Set(dates).count == 1 else { throw SyncClientError.invalidAnswer("the group's answers carry different dates") }
        try recordSynced(db, endpoints, date: date)
        try Replica.endBulkStamps(db)
        return StreamedSync(date: date, replaced: replaced, others: staged.held.filter { !syncIDs.contains($0.key) })
    }
}

/// The id of the `verify` call in a sync group (a reserved path's name, so no sync endpoint has it).
enum SyncRequestID {
    static let verify = "verify"
}
