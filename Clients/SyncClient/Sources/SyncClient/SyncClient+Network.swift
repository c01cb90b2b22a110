import Foundation

/// One sub-request of a `POST /group` (protocol §6).
struct SubRequest: Sendable {
    var id: String
    var method: String
    var url: String
    var body: JSONValue?
    var headers: [String: String] = [:]

    var json: JSONValue {
        var object: JSONObject = ["id": .string(id), "method": .string(method), "url": .string(url)]
        if let body { object["body"] = body }
        if !headers.isEmpty { object["headers"] = .object(headers.mapValues { .string($0) }) }
        return .object(object)
    }
}

/// A sub-response: status, body and headers (`ETag`).
struct SubResponse: Sendable {
    var status: Int
    var body: JSONValue
    var headers: [String: String]
}

extension SyncClient {
    func url(_ path: String) -> URL {
        URL(string: configuration.serverURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/api/v1" + path)!
    }

    /// One call to the server; a transport failure is `offline`.
    func call(
        _ method: String, _ path: String, body: JSONValue? = nil, headers: [String: String] = [:], auth: Bool = true
    ) async throws
        -> HTTPAnswer
    {
        var headers = headers
        if auth {
            guard let token = session.withLock({ $0?.token }) else { throw SyncClientError.notSignedIn }
            headers["Authorization"] = "Bearer \(token)"
        }
        var data: Data?
        if let body {
            data = Data(body.text.utf8)
            headers["Content-Type"] = "application/json"
        }
        do {
            return try await configuration.transport.send(HTTPCall(method: method, url: url(path), headers: headers, body: data))
        } catch let error as SyncClientError {
            throw error
        } catch {
            throw SyncClientError.offline("\(error.localizedDescription)")
        }
    }

    /// One `POST /group`; its sub-responses by id. A 401 anywhere means the session is gone.
    func group(_ requests: [SubRequest]) async throws -> [String: SubResponse] {
        let answer = try await call("POST", "/group", body: .object(["requests": .array(requests.map(\.json))]))
        guard answer.status == 200, let responses = answer.json?["responses"]?.arrayValue else { throw SyncClientError.from(answer) }
        var out: [String: SubResponse] = [:]
        for response in responses {
            guard let id = response["id"]?.stringValue else { continue }
            var status = 0
            if case .number(let number)? = response["status"] { status = Int(number) }
            if status == 401 { throw SyncClientError.notSignedIn }
            let headers = response["headers"]?.objectValue?.compactMapValues(\.stringValue) ?? [:]
            out[id] = SubResponse(status: status, body: response["body"] ?? .null, headers: headers)
        }
        return out
    }

    /// The server's limits (`GET /api/v1/`), read once per session and kept in the replica.
    func limits() async throws -> (groupMaxRequests: Int, nbMax: Int, maxChildren: Int) {
        let stored = try await replica.pool.read { db in try Replica.meta(db, "limits.json") }
        var json = stored.flatMap { try? JSONValue.parse($0) }
        if json == nil {
            let answer = try await call("GET", "/", auth: false)
            guard answer.status == 200, let limits = answer.json?["limits"] else { throw SyncClientError.from(answer) }
            json = limits
            try await replica.pool.write { db in try Replica.setMeta(db, "limits.json", limits.text) }
        }
        func number(_ key: String, _ fallback: Int) -> Int {
            if case .number(let n)? = json?[key] { return Int(n) }
            return fallback
        }
        return (number("groupMaxRequests", 20), number("nbMax", 500), number("maxChildren", 100))
    }

    // MARK: Sessions

    /// Creates a family and its first account, and signs in.
    public func signUp(family: String, username: String, password: String) async throws {
        try await signIn(
            "/signup",
            ["family": .string(family), "username": .string(username), "password": .string(password)], expected: 201)
    }

    public func logIn(username: String, password: String) async throws {
        try await signIn("/login", ["username": .string(username), "password": .string(password)], expected: 200)
    }

    private func signIn(_ path: String, _ body: JSONObject, expected: Int) async throws {
        let answer = try await call("POST", path, body: .object(body), auth: false)
        guard answer.status == expected, let json = answer.json, let token = json["token"]?.stringValue,
            let account = json["accountId"]?.stringValue, let family = json["familyId"]?.stringValue
        else { throw SyncClientError.from(answer) }
        let new = ClientSession(token: token, accountID: account, familyID: family)
        let previous = session.withLock { $0 }
        if previous?.familyID != family || previous?.accountID != account {
            // Another account's data never shows through.
            try await replica.pool.write { db in try Replica.eraseData(db, keepingSession: false) }
        }
        try configuration.tokenStore.save(new)
        session.withLock { $0 = new }
        try refreshCounts()
    }

    /// Signs out: pushes unsent writes first (unless `discardingPendingWrites`), revokes the token on the server,
    /// and erases the replica's data. Observers stay valid and see empty results.
    public func logOut(discardingPendingWrites: Bool = false) async throws {
        if !discardingPendingWrites {
            _ = try await push()
            let left = try pendingOperations().count
            guard left == 0 else { throw SyncClientError.invalid("\(left) writes could not be pushed; log out discarding them, or retry") }
        }
        await stopLive()
        if isSignedIn {
            // Offline: the token is forgotten here; it expires on the server.
            _ = try? await call("POST", "/logout")
        }
        try configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        try await replica.pool.write { db in try Replica.eraseData(db, keepingSession: false) }
        try refreshCounts()
    }

    func sessionEnded() {
        try? configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        statusCenter.update { $0.state = .error("signed out") }
    }
}
