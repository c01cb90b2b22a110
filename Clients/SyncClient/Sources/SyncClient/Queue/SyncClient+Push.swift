import Foundation
import GRDB
import Logging

extension SyncClient {
    /// Pushes the queue now (a sync pushes first anyway), retrying network errors, 429 and 503 with backoff. Returns
    /// how many writes landed, how many the server refused for good, and how many conflicts were settled.
    @discardableResult
    public func push() async throws -> SyncReport {
        try await configuration.retryPolicy.run { try await self.pushQueue() }
    }

    /// One pass over the queue, in order, in groups within the server's limits. A transient error stops the pass
    /// (what is left stays queued, in order); a permanent refusal moves the write to the failed list and goes on. A
    /// group refused for its size has the limits read again and is split to fit them (`pushFitting`).
    func pushQueue() async throws -> SyncReport {
        guard isSignedIn else { throw SyncClientError.notSignedIn }
        var report = SyncReport()
        let model = try await serverModel()
        // Media first: an item that names one must never reach the server before it.
        report.pushed += try await pushUploads()
        var fitting = Fitting(limits: try await limits())
        // A conflict settled as "keep local" goes round again with the server's new ETag; three rounds at most.
        for _ in 0..<3 {
            // Most syncs have nothing to push: a read says so without waiting for the replica's writer.
            guard try await replica.pool.read({ db in try Replica.hasQueued(db) }) else { break }
            // Read and marked `sent` in one transaction: a delete after this point is sent, never folded away.
            let operations = try await replica.pool.write { db in try Replica.takeForPush(db) }
            guard !operations.isEmpty else { break }
            // Batch after batch, each cut with the limits as known then (read again after a refusal).
            var rest = operations[...]
            while !rest.isEmpty {
                let count = Self.firstBatchCount(rest, limits: fitting.limits)
                try await pushFitting(Array(rest.prefix(count)), model, &fitting, into: &report)
                rest = rest.dropFirst(count)
            }
        }
        if report.pushed + report.failed > 0 { replica.checkpointSoon() }
        return report
    }

    /// The server's limits as one push knows them, and whether it has read them again already (once per push).
    struct Fitting {
        var limits: ServerDescription.Limits
        var refreshed = false
    }

    /// Pushes `batch`; when the server refuses the group for its size (413, `invalid_group`: its limits went down), reads
    /// the limits again (once per push) and pushes what is still queued of the batch in groups that fit them, halving
    /// a group refused again. A single write refused for its size alone can never fit: it moves to the failed list
    /// with the server's answer (413 `payload_too_large`) instead of failing every push.
    private func pushFitting(
        _ batch: [PendingOperation], _ model: ServerModel, _ fitting: inout Fitting, into report: inout SyncReport
    ) async throws {
        do {
            try await pushBatch(batch, model, into: &report)
            try refreshCounts()
            return
        } catch let error as SyncClientError where error.refusesGroupSize {
            // What the batch still holds (the reads before its writes may have settled some): never sent twice.
            let keys = Set(batch.map(\.key))
            let left = try await replica.pool.read { db in try Replica.pending(db).filter { keys.contains($0.key) } }
            guard !left.isEmpty else { return }
            var parts: [[PendingOperation]]
            if !fitting.refreshed {
                fitting.refreshed = true
                fitting.limits = try await limits(refresh: true)
                parts = Self.batches(left, limits: fitting.limits)
                // The same split again would meet the same refusal: halve it.
                if parts.count == 1, left.count > 1 { parts = Self.halves(left) }
            } else if left.count > 1 {
                parts = Self.halves(left)
            } else {
                // Alone and still refused: only a body over the limit is refused for good.
                guard case .server(let status, let code, let detail) = error, status == 413 else { throw error }
                try await refuse(left[0], status: status, code: code.rawValue, detail: detail, into: &report)
                try refreshCounts()
                return
            }
            for part in parts { try await pushFitting(part, model, &fitting, into: &report) }
        }
    }

    /// A batch in two, in order.
    static func halves(_ batch: [PendingOperation]) -> [[PendingOperation]] {
        let middle = (batch.count + 1) / 2
        return [Array(batch[..<middle]), Array(batch[middle...])]
    }

    /// Splits the queue into groups of at most `groupMaxRequests` writes and about `bodyMaxBytes` of JSON.
    static func batches(_ operations: [PendingOperation], limits: ServerDescription.Limits) -> [[PendingOperation]] {
        var batches: [[PendingOperation]] = []
        var rest = operations[...]
        while !rest.isEmpty {
            let count = firstBatchCount(rest, limits: limits)
            batches.append(Array(rest.prefix(count)))
            rest = rest.dropFirst(count)
        }
        return batches
    }

    /// How many of `operations` the next group takes (one at least): at most `groupMaxRequests`, and about
    /// `bodyMaxBytes` of JSON.
    static func firstBatchCount(_ operations: ArraySlice<PendingOperation>, limits: ServerDescription.Limits) -> Int {
        var count = 0
        var size = 0
        let budget = max(1024, limits.bodyMaxBytes - 1024)
        for op in operations {
            let cost = (op.body?.jsonText.utf8.count ?? 0) + 200
            if count > 0, count >= max(1, limits.groupMaxRequests) || size + cost > budget { break }
            count += 1
            size += cost
        }
        return count
    }

    /// Pushes one group of writes (after a group of reads for the ETags it lacks), adding what happened to `report`
    /// as it happens: a group that fails midway keeps the count of what the reads settled.
    private func pushBatch(_ batch: [PendingOperation], _ model: ServerModel, into report: inout SyncReport) async throws {
        // A collection the model no longer has is written as a list: the server refuses it, and the write fails.
        let layouts = batch.map { model[$0.collection] ?? ServerModel.Collection(name: $0.collection, kind: .list) }
        var bases = try await replica.pool.read { db in try batch.map { try Replica.base(db, $0) } }
        // The ETag of an item pulled by a sync is not known (sync answers carry none): read it first; a version that
        // moved since the base is a conflict, settled before writing.
        // A patch goes with its base's ETag too: a field another device changed since is merged here, field by field.
        let unknown = batch.indices.filter { bases[$0].server != nil && bases[$0].etag == nil }
        var settled = Set<Int>()
        if !unknown.isEmpty {
            let answers = try await group(unknown.map { SubRequest(id: "\($0)", method: "GET", url: "/api/v1" + Self.path(batch[$0], layouts[$0])) })
            for index in unknown {
                guard let answer = answers["\(index)"] else { continue }
                let server = answer.status == 200 ? answer.body?.objectValue : nil
                if answer.status == 200, server.map(layouts[index].stored) == bases[index].server.map(layouts[index].stored) {
                    bases[index].etag = answer.header("ETag")
                } else if answer.status == 200 || answer.status == 404 {
                    if Self.alreadyThere(batch[index], layouts[index], server: server) {
                        try await replica.pool.write { db in
                            try Replica.landed(db, batch[index], layouts[index], server: server, etag: answer.header("ETag"))
                        }
                        report.pushed += 1
                    } else {
                        try await settle(batch[index], layouts[index], base: bases[index].server, server: server, etag: answer.header("ETag"))
                        report.conflicts += 1
                    }
                    settled.insert(index)
                } else if let error = SyncClientError.from(status: answer.status, body: answer.body, retryAfter: answer.header("Retry-After")),
                    error.isTransient
                {
                    throw error
                }
            }
        }
        let writes = batch.indices.filter { !settled.contains($0) }
        guard !writes.isEmpty else { return }
        let requests = writes.map { index -> SubRequest in
            let op = batch[index]
            var headers: [String: String] = [:]
            if let etag = bases[index].etag {
                headers["If-Match"] = etag
            } else if op.kind == .put, layouts[index].kind != .singleton {
                // Created here: it must not overwrite an item someone else created with the same id.
                headers["If-None-Match"] = "*"
            }
            return SubRequest(
                id: "\(index)", method: op.kind.rawValue.uppercased(), url: "/api/v1" + Self.path(op, layouts[index]),
                body: op.body.map { .object($0) }, headers: headers)
        }
        let answers = try await group(requests)
        for index in writes {
            let op = batch[index]
            let layout = layouts[index]
            guard let answer = answers["\(index)"] else { continue }
            switch answer.status {
            case 200, 201, 204:
                try await replica.pool.write { db in
                    try Replica.landed(db, op, layout, server: op.kind == .delete ? nil : answer.body?.objectValue, etag: answer.header("ETag"))
                }
                report.pushed += 1
            case let status where status == 412 || (status == 404 && !(op.kind == .put && bases[index].server == nil)):
                // Changed or gone since (a 404 on a new child is a parent that is gone: refused below): see what the server holds (a retried write whose first attempt landed looks
                // like this too, and is no conflict).
                let current = try await call("GET", Self.path(op, layout))
                if let error = SyncClientError.from(status: current.status, body: current.json, retryAfter: current.header("Retry-After")),
                    error.isTransient
                {
                    throw error
                }
                let server = current.status == 200 ? current.json?.objectValue : nil
                if Self.alreadyThere(op, layout, server: server) {
                    try await replica.pool.write { db in try Replica.landed(db, op, layout, server: server, etag: current.header("ETag")) }
                    report.pushed += 1
                } else {
                    try await settle(op, layout, base: bases[index].server, server: server, etag: current.header("ETag"))
                    report.conflicts += 1
                }
            default:
                let error = SyncClientError.from(answer)
                if error.isTransient { throw error }
                // Refused for good (validation, a parent that is gone): inspectable, and the queue goes on.
                let code = answer.body?["code"]?.stringValue ?? "http_\(answer.status)"
                let detail = answer.body?["detail"]?.stringValue ?? ""
                try await refuse(op, status: answer.status, code: code, detail: detail, into: &report)
            }
        }
    }

    /// A write the server refused for good: moved to the failed list (`failedOperations`), logged and counted.
    private func refuse(_ op: PendingOperation, status: Int, code: String, detail: String, into report: inout SyncReport) async throws {
        try await replica.pool.write { db in try Replica.refused(db, op, status: status, code: code, detail: detail) }
        log.push.warning(
            "write refused: moved to failedOperations",
            metadata: [
                "collection": "\(op.collection.rawValue)", "id": "\(op.id)", "method": "\(op.kind.rawValue)", "status": "\(status)",
                "code": "\(code)",
            ])
        report.failed += 1
    }

    /// What the app holds locally for a write: the PUT's state, the patch applied to the base, nothing for a delete.
    static func localVersion(_ op: PendingOperation, base: JSONObject?) -> JSONObject? {
        switch op.kind {
        case .put: return op.body
        case .delete: return nil
        case .patch:
            var result = base ?? [:]
            for (key, value) in op.body ?? [:] { result[key] = value }
            return result
        }
    }

    static func path(_ op: PendingOperation, _ layout: ServerModel.Collection) -> String {
        layout.path(id: op.id, parent: op.parent) ?? "/\(op.collection.rawValue)"
    }

    /// Whether the server already holds what the operation would write (its first attempt landed).
    static func alreadyThere(_ op: PendingOperation, _ layout: ServerModel.Collection, server: JSONObject?) -> Bool {
        switch op.kind {
        case .delete: return server == nil
        case .put, .patch:
            guard let server, let local = op.body else { return false }
            return sameContent(local: local, server: server, serverSet: layout.serverSetFields)
        }
    }

    /// The client's fields all equal on the server (server-set fields aside; a field the client left out equals
    /// the server's null or default).
    static func sameContent(local: JSONObject, server: JSONObject, serverSet: Set<String>) -> Bool {
        for (key, value) in local where !serverSet.contains(key) {
            if value != (server[key] ?? .null) { return false }
        }
        return true
    }

    /// A conflict, settled field by field (protocol §2's versions): fields only one side changed keep that side's
    /// value, without asking; the collection's handler decides only when both changed one field (within
    /// `conflictHandlerTimeout`), else the server's value of those fields is kept. A delete or a create on either side
    /// goes to the handler whole (server wins by default). Every outcome is written to the conflict journal.
    private func settle(
        _ op: PendingOperation, _ layout: ServerModel.Collection, base: JSONObject?, server: JSONObject?, etag: String?
    ) async throws {
        let handler = conflictHandlers.withLock { $0[op.collection] }
        let local = Self.localVersion(op, base: base)
        let versions = ConflictVersions(collection: op.collection, id: op.id, base: base, local: local, server: server)
        var resolution: ConflictResolution
        var outcome: ConflictRecord.Resolution
        var fields: [String] = []
        if let base, let local, let server {
            let merge = FieldMerge(base: base, local: local, server: server, ignored: layout.serverSetFields)
            fields = merge.conflicting
            if merge.conflicting.isEmpty {
                (resolution, outcome) = (merge.localChanged.isEmpty ? .keepServer : .merged(merge.merged), .merged)
            } else if let handler, let decided = await Self.decide(handler, versions, within: configuration.conflictHandlerTimeout) {
                (resolution, outcome) = (decided, Self.outcome(decided))
            } else {
                (resolution, outcome) = (.merged(merge.merged), .serverKeptFields)
            }
        } else {
            let decided = await handler.asyncMap { await Self.decide($0, versions, within: self.configuration.conflictHandlerTimeout) } ?? nil
            resolution = decided ?? .keepServer
            outcome = Self.outcome(resolution)
        }
        let (settled, journaled, conflicting) = (resolution, outcome, fields)
        let result: JSONObject? =
            switch settled {
            case .keepServer: server
            case .keepLocal: local
            case .merged(let merged): merged
            }
        try await replica.pool.write { db in
            switch settled {
            case .keepServer:
                try Replica.landed(db, op, layout, server: server, etag: etag)
            case .keepLocal, .merged:
                // The server's version becomes the base; the edit stays queued and goes again with its ETag.
                if let server {
                    try Replica.storeServer(db, layout, parent: op.parent ?? "", server, etag: etag)
                } else {
                    try Replica.removeServer(db, layout, parent: op.parent ?? "", id: op.id)
                }
                if case .merged(let merged) = settled {
                    try Replica.save(db, layout, id: op.id, parent: op.parent ?? "", merged)
                }
            }
            try Replica.journal(db, op, journaled, fields: conflicting, base: base, local: local, server: server, result: result)
        }
        log.push.info(
            "conflict settled",
            metadata: [
                "collection": "\(op.collection.rawValue)", "id": "\(op.id)", "resolution": "\(journaled.rawValue)",
                "fields": "\(conflicting.joined(separator: ","))",
            ])
    }

    static func outcome(_ resolution: ConflictResolution) -> ConflictRecord.Resolution {
        switch resolution {
        case .keepServer: .keptServer
        case .keepLocal: .keptLocal
        case .merged: .handlerMerged
        }
    }

    /// The handler's answer, or nil when it has none within `limit` (it may be asking the user): the push goes on
    /// without it, and the handler's task is cancelled.
    static func decide(_ handler: @escaping ConflictHandler, _ versions: ConflictVersions, within limit: Duration) async -> ConflictResolution? {
        await withCheckedContinuation { continuation in
            let answered = Locked(false)
            let finish: @Sendable (ConflictResolution?) -> Void = { value in
                if answered.withLock({ done in
                    defer { done = true }; return !done
                }) {
                    continuation.resume(returning: value)
                }
            }
            let work = Task { finish(await handler(versions)) }
            let timer = Task {
                try? await Task.sleep(for: limit)
                work.cancel()
                finish(nil)
            }
            Task {
                _ = await work.value
                timer.cancel()
            }
        }
    }
}

extension Optional {
    /// `map` with an async transform.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let self else { return nil }
        return await transform(self)
    }
}

extension ServerModel.Collection {
    /// The members the server sets and ignores when sent back: `id`, `modified`, `author` and `created` of an authored
    /// collection, a paginated list's order field, children and `nomore`.
    var serverSetFields: Set<String> {
        var fields: Set<String> = ["id", "modified", "nomore"]
        if authored || kind == .child { fields.formUnion(["author", "created"]) }
        if let orderField { fields.insert(orderField) }
        if let children { fields.insert(children.rawValue) }
        return fields
    }

    /// An item as the replica stores it: without the children and `nomore` a paginated item carries.
    func stored(_ item: JSONObject) -> String {
        var copy = item
        if let children { copy[children.rawValue] = nil }
        copy["nomore"] = nil
        return copy.jsonText
    }
}
