import Foundation
import GRDB

extension SyncClient {
    /// Pushes the queue now, retrying network errors, 429 and 503 with backoff (`RetryPolicy`). Returns how many
    /// writes landed and how many the server refused for good.
    @discardableResult
    public func push() async throws -> (pushed: Int, failed: Int) {
        var attempt = 0
        while true {
            do {
                return try await pushQueue()
            } catch let error as SyncClientError where error.isTransient && attempt + 1 < configuration.retryPolicy.attempts {
                let retryAfter: Int? = if case .server(_, _, let detail) = error { Int(detail) } else { nil }
                try await configuration.retryPolicy.sleep(configuration.retryPolicy.delay(after: attempt, retryAfter: retryAfter))
                attempt += 1
            }
        }
    }

    /// One pass over the queue, in order, in groups within the server's limit. Stops at the first transient error
    /// (the rest stays queued, in order).
    func pushQueue() async throws -> (pushed: Int, failed: Int) {
        var pushed = 0
        var failed = 0
        // A conflict settled as "keep local" goes round again with the server's new ETag; three rounds at most.
        for _ in 0..<3 {
            let operations = try pendingOperations()
            guard !operations.isEmpty else { break }
            let limit = try await limits().groupMaxRequests
            for start in stride(from: 0, to: operations.count, by: limit) {
                let batch = Array(operations[start..<min(operations.count, start + limit)])
                let outcome = try await pushBatch(batch)
                pushed += outcome.pushed
                failed += outcome.failed
            }
            try refreshCounts()
        }
        return (pushed, failed)
    }

    private func pushBatch(_ batch: [PendingOperation]) async throws -> (pushed: Int, failed: Int) {
        var bases = try await replica.pool.read { db in try batch.map { try Replica.base(db, $0) } }
        // The ETag of an item pulled by a sync is not known (sync answers carry none): read it first, and treat a
        // version that moved since as a conflict.
        let unknown = batch.indices.filter { bases[$0].server != nil && bases[$0].etag == nil }
        var settled = Set<Int>()
        if !unknown.isEmpty {
            let answers = try await group(unknown.map { SubRequest(id: "\($0)", method: "GET", url: "/api/v1" + path(batch[$0])) })
            for index in unknown {
                guard let answer = answers["\(index)"] else { continue }
                let server = answer.status == 200 ? answer.body.objectValue : nil
                if answer.status == 200, server?.jsonTextWithoutChildren == bases[index].server?.jsonTextWithoutChildren {
                    bases[index].etag = answer.headers["ETag"] ?? answer.headers["etag"]
                } else if answer.status == 200 || answer.status == 404 {
                    try await settle(batch[index], base: bases[index].server, server: server, etag: answer.headers["ETag"])
                    settled.insert(index)
                } else if let error = Self.transient(answer) {
                    throw error
                }
            }
        }
        let writes = batch.indices.filter { !settled.contains($0) }
        guard !writes.isEmpty else { return (0, 0) }
        let requests = writes.map { index -> SubRequest in
            let op = batch[index]
            var headers: [String: String] = [:]
            if let etag = bases[index].etag { headers["If-Match"] = etag } else if op.kind == .put { headers["If-None-Match"] = "*" }
            return SubRequest(
                id: "\(index)", method: op.kind == .put ? "PUT" : "DELETE", url: "/api/v1" + path(op),
                body: op.body.map { .object($0) }, headers: headers)
        }
        let answers = try await group(requests)
        var pushed = 0
        var failed = 0
        for index in writes {
            let op = batch[index]
            guard let answer = answers["\(index)"] else { continue }
            switch answer.status {
            case 200, 201, 204:
                try await replica.pool.write { db in
                    try Replica.landed(db, op, server: op.kind == .put ? answer.body.objectValue : nil, etag: answer.headers["ETag"])
                }
                pushed += 1
            case 412, 404:
                if answer.status == 404, op.kind == .put, bases[index].server == nil {
                    // A new child under a parent that is gone: refused for good.
                    try await replica.pool.write { db in
                        try Replica.refused(db, op, status: 404, code: "not_found", detail: answer.body["detail"]?.stringValue ?? "")
                    }
                    failed += 1
                    continue
                }
                // Changed or gone since: see what the server holds (a retried write that had landed looks so too).
                let current = try await call("GET", path(op))
                if let error = Self.transient(current) { throw error }
                let server = current.status == 200 ? current.json?.objectValue : nil
                if Self.alreadyThere(op, server: server) {
                    try await replica.pool.write { db in try Replica.landed(db, op, server: server, etag: current.header("ETag")) }
                    pushed += 1
                } else {
                    try await settle(op, base: bases[index].server, server: server, etag: current.header("ETag"))
                }
            default:
                if let error = Self.transient(answer) { throw error }
                let code = answer.body["code"]?.stringValue ?? "http_\(answer.status)"
                try await replica.pool.write { db in
                    try Replica.refused(db, op, status: answer.status, code: code, detail: answer.body["detail"]?.stringValue ?? "")
                }
                failed += 1
            }
        }
        return (pushed, failed)
    }

    func path(_ op: PendingOperation) -> String {
        op.collection.path(id: op.id, parent: op.parent) ?? "/\(op.collection.rawValue)"
    }

    static func transient(_ answer: SubResponse) -> SyncClientError? {
        transient(status: answer.status, body: answer.body, retryAfter: answer.headers["Retry-After"])
    }

    static func transient(_ answer: HTTPAnswer) -> SyncClientError? {
        transient(status: answer.status, body: answer.json ?? .null, retryAfter: answer.header("Retry-After"))
    }

    private static func transient(status: Int, body: JSONValue, retryAfter: String?) -> SyncClientError? {
        if status == 401 { return .notSignedIn }
        guard status == 429 || status >= 500 else { return nil }
        return .server(status: status, code: body["code"]?.stringValue ?? "http_\(status)", detail: retryAfter ?? "")
    }

    /// Whether the server already holds what the operation would write (its first attempt landed).
    static func alreadyThere(_ op: PendingOperation, server: JSONObject?) -> Bool {
        switch op.kind {
        case .delete: return server == nil
        case .put:
            guard let server, let local = op.body else { return false }
            return sameContent(local: local, server: server)
        }
    }

    /// The client's fields all equal on the server (server-set fields and defaults aside).
    static func sameContent(local: JSONObject, server: JSONObject) -> Bool {
        let serverSet: Set<String> = ["modified", "author", "created", "lastMessageAt", "messages", "comments", "nomore"]
        for (key, value) in local where !serverSet.contains(key) {
            let theirs = server[key] ?? .null
            if value != theirs { return false }
        }
        return true
    }

    /// A conflict: the collection's handler decides (server wins by default).
    private func settle(_ op: PendingOperation, base: JSONObject?, server: JSONObject?, etag: String?) async throws {
        let handler = conflictHandlers.withLock { $0[op.collection] }
        let resolution = handler?(ConflictVersions(base: base, local: op.kind == .put ? op.body : nil, server: server)) ?? .keepServer
        try await replica.pool.write { db in
            switch resolution {
            case .keepServer:
                try Replica.landed(db, op, server: server, etag: etag)
            case .keepLocal, .merged:
                // The server's version becomes the base; the edit stays queued and goes again with its ETag.
                if let server { try Replica.storeServer(db, op.collection, parent: op.parent ?? "", server, etag: etag) }
                if case .merged(let merged) = resolution {
                    try Replica.save(db, op.collection, id: op.id, parent: op.parent ?? "", merged)
                }
            }
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The JSON text of an item without the children a sync carries inside it (as the replica stores it).
    var jsonTextWithoutChildren: String {
        var copy = self
        copy["messages"] = nil
        copy["comments"] = nil
        copy["nomore"] = nil
        return copy.jsonText
    }
}
