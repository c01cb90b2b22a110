import Foundation
import SyncClient

extension FakeSyncServer {
    static func apiPath(_ url: URL) -> String {
        let path = url.path.hasPrefix("/api/v1") ? String(url.path.dropFirst("/api/v1".count)) : url.path
        return (path.isEmpty ? "/" : path) + (url.query.map { "?" + $0 } ?? "")
    }

    static func json(_ status: Int, _ body: JSONValue, headers: [String: String] = [:]) -> HTTPAnswer {
        HTTPAnswer(status: status, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a }, body: Data(body.text.utf8))
    }

    static func problem(_ status: Int, code: String, retryAfter: Bool = false) -> HTTPAnswer {
        let body: JSONValue = [
            "type": .string("https://syncapi.dev/problems/\(code)"), "title": .string(code), "status": .number(JSONNumber(status)),
            "detail": .string(code), "code": .string(code),
        ]
        return json(status, body, headers: retryAfter ? ["Retry-After": "1"] : [:])
    }

    /// The time as the server writes it, from `time` when a test set it.
    static func now(_ state: State) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: state.time ?? Date())
    }

    /// Stores an item with its server-set fields (as its collection's model says); answers it.
    static func store(
        _ state: inout State, _ layout: ServerModel.Collection?, _ parent: String, _ id: String, _ body: JSONObject, author: String
    ) -> Item {
        state.version += 1
        let collection = layout?.name.rawValue ?? ""
        let key = collection + "/" + parent
        let previous = state.items[key]?[id]
        var json = body
        for serverSet in ["modified", "author", "created", "nomore", "_parent"] { json[serverSet] = nil }
        if let children = layout?.children { json[children.rawValue] = nil }
        if let orderField = layout?.orderField { json[orderField] = nil }
        json["id"] = .string(id)
        let now = Self.now(state)
        if layout?.authored == true || layout?.kind == .child {
            json["author"] = previous?.json["author"] ?? .string(author)
            json["created"] = previous?.json["created"] ?? .string(now)
        }
        if let orderField = layout?.orderField { json[orderField] = previous?.json[orderField] ?? .string(now) }
        json["modified"] = .string(now)
        let item = Item(json: json, version: state.version)
        state.items[key, default: [:]][id] = item
        state.tombstones[key]?[id] = nil
        return item
    }

    /// `GET /model`: the model as the server serves it (its collections' kinds, endpoints and orders).
    var modelAnswer: JSONValue {
        var collections: JSONObject = [:]
        for collection in model.collections.values where !collection.isReadOnly {
            var entry: JSONObject = ["kind": .string(collection.kind.rawValue), "fields": [:], "rules": []]
            if collection.kind != .singleton { entry["authored"] = .bool(collection.authored) }
            for (key, value) in [
                ("sync", collection.sync), ("parent", collection.parent?.rawValue), ("children", collection.children?.rawValue),
                ("order", collection.order), ("orderField", collection.orderField), ("scope", collection.scope),
            ] {
                if let value { entry[key] = .string(value) }
            }
            collections[collection.name.rawValue] = .object(entry)
        }
        return ["model": .string(model.name), "digest": .string(model.digest), "collections": .object(collections)]
    }

    func answer(_ state: inout State, _ call: HTTPCall) -> HTTPAnswer {
        let path = Self.apiPath(call.url)
        let body = call.body.flatMap { try? JSONValue.parse($0) }
        if let answer = spaceAnswer(&state, call, path: path) { return answer }
        switch (call.method, path.split(separator: "?").first.map(String.init) ?? path) {
        case ("GET", "/spaces"):
            return Self.spacesAnswer(state)
        case ("GET", "/"):
            return Self.json(
                200,
                [
                    "version": "fake", "tombstoneRetentionSeconds": 2_592_000, "signup": true, "mediaMaxBytes": 20_971_520,
                    "mediaTypes": ["image/jpeg", "image/png"],
                    "limits": [
                        "groupMaxRequests": .number(JSONNumber(state.limits.groupMaxRequests)), "nbMax": .number(JSONNumber(state.limits.nbMax)),
                        "maxChildren": .number(JSONNumber(state.limits.maxChildren)),
                        "bodyMaxBytes": .number(JSONNumber(state.limits.bodyMaxBytes)),
                    ],
                ])
        case ("GET", "/model"):
            return Self.json(200, modelAnswer)
        case ("POST", "/signup"), ("POST", "/login"):
            let username = body?["username"]?.stringValue ?? ""
            let password = body?["password"]?.stringValue ?? ""
            if call.url.path.hasSuffix("/signup") {
                state.accounts[username] = password
            } else if state.accounts[username] != password {
                return Self.problem(401, code: "invalid_credentials")
            }
            return Self.json(
                call.url.path.hasSuffix("/signup") ? 201 : 200,
                ["token": "fake-token", "accountId": .string(accountID), "familyId": .string(familyID), "expiresAt": "2099-01-01T00:00:00.000Z"])
        case ("POST", "/logout"):
            return HTTPAnswer(status: 204, headers: [:], body: Data())
        case ("POST", "/group"):
            let requests = body?["requests"]?.arrayValue ?? []
            guard (1...max(1, state.limits.groupMaxRequests)).contains(requests.count) else {
                return Self.problem(400, code: "invalid_group")
            }
            var responses: [JSONValue] = []
            for request in requests {
                let sub = HTTPCall(
                    method: request["method"]?.stringValue ?? "GET",
                    url: URL(string: "http://fake" + (request["url"]?.stringValue ?? "/"))!,
                    headers: (request["headers"]?.objectValue ?? [:]).compactMapValues(\.stringValue),
                    body: request["body"].map { Data($0.text.utf8) })
                state.calls.append("\(sub.method) \(Self.apiPath(sub.url))")
                let answer = answer(&state, sub)
                var response: JSONObject = ["id": request["id"] ?? .null, "status": .number(JSONNumber(answer.status))]
                if let etag = answer.header("ETag") { response["headers"] = ["ETag": .string(etag)] }
                response["body"] = answer.body.isEmpty ? .null : ((try? JSONValue.parse(answer.body)) ?? .null)
                responses.append(.object(response))
            }
            return Self.json(200, ["responses": .array(responses)])
        case ("POST", "/media"):
            let data = call.body ?? Data()
            let sha = String(SyncClient.mediaURL(of: data).dropFirst("/api/v1/media/".count))
            state.media[sha] = data
            return Self.json(
                201,
                [
                    "url": .string("/api/v1/media/" + sha), "sha256": .string(sha), "contentType": .string(call.headers["Content-Type"] ?? ""),
                    "size": .number(JSONNumber(data.count)),
                ])
        case (_, let bare):
            return itemOrSync(&state, call.method, bare, query: path, body: body, headers: call.headers)
        }
    }
}
