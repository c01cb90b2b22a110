import Foundation
import SyncClient

extension FakeSyncServer {
    /// Item calls (`/contacts/c1`, `/threads/t1/messages/m1`, `/family`, `/settings`), sync endpoints and media.
    static func itemOrSync(
        _ state: inout State, _ method: String, _ path: String, query: String, body: JSONValue?, headers: [String: String], familyID: String,
        accountID: String
    ) -> HTTPAnswer {
        let parts = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        if method == "GET", let sync = syncAnswer(&state, parts.first ?? "", query: query, familyID: familyID, accountID: accountID) {
            return json(200, sync, headers: ["ETag": "\"\(sync["date"]?.stringValue ?? "")\""])
        }
        if parts.count == 2, parts[0] == "media" {
            guard let data = state.media[parts[1]] else { return problem(404, code: "not_found") }
            return HTTPAnswer(status: 200, headers: ["Content-Type": "application/octet-stream"], body: data)
        }
        let (collection, parent, id): (String, String, String)
        switch parts.count {
        case 1 where parts[0] == "family": (collection, parent, id) = ("family", "", familyID)
        case 1 where parts[0] == "settings": (collection, parent, id) = ("settings", "", accountID)
        case 2: (collection, parent, id) = (parts[0], "", parts[1])
        case 4: (collection, parent, id) = (parts[2], parts[1], parts[3])
        default: return problem(404, code: "not_found")
        }
        let key = collection + "/" + parent
        let current = state.items[key]?[id]
        if let ifMatch = headers["If-Match"], ifMatch != "\"\(current?.version ?? -1)\"" { return problem(412, code: "precondition_failed") }
        if headers["If-None-Match"] == "*", current != nil, method == "PUT" { return problem(412, code: "precondition_failed") }
        func stored(_ item: Item) -> HTTPAnswer { json(200, .object(item.json), headers: ["ETag": "\"\(item.version)\""]) }
        switch method {
        case "GET":
            guard let current else { return problem(404, code: "not_found") }
            return stored(current)
        case "PUT":
            guard case .object(let object)? = body else { return problem(400, code: "invalid_json") }
            return stored(store(&state, collection, parent, id, object, author: accountID))
        case "PATCH":
            guard let current, case .object(let patch)? = body else { return problem(current == nil ? 404 : 400, code: "not_found") }
            var merged = current.json
            for (field, value) in patch { merged[field] = value == .null ? nil : value }
            return stored(store(&state, collection, parent, id, merged, author: accountID))
        case "DELETE":
            state.version += 1
            state.items[key]?[id] = nil
            return HTTPAnswer(status: 204, headers: [:], body: Data())
        default:
            return problem(405, code: "method_not_allowed")
        }
    }

    /// A whole answer of a sync endpoint of the default model, nil for another path.
    static func syncAnswer(_ state: inout State, _ endpoint: String, query: String, familyID: String, accountID: String) -> JSONValue? {
        let date = JSONValue.string("fake.\(state.version)")
        func live(_ collection: String, parent: String = "") -> [JSONValue] {
            (state.items[collection + "/" + parent] ?? [:]).sorted { $0.key < $1.key }.map { .object($0.value.json) }
        }
        func sorted(_ collection: String, by field: String, parent: String = "") -> [JSONObject] {
            (state.items[collection + "/" + parent] ?? [:]).values.map(\.json).sorted {
                let a = $0[field]?.stringValue ?? ""
                let b = $1[field]?.stringValue ?? ""
                return a != b ? a > b : ($0["id"]?.stringValue ?? "") > ($1["id"]?.stringValue ?? "")
            }
        }
        switch endpoint {
        case "ctcsync", "evtsync", "plcsync":
            let collection = ["ctcsync": "contacts", "evtsync": "events", "plcsync": "places"][endpoint]!
            return ["date": date, "sync": false, "updated": .array(live(collection)), "deleted": []]
        case "msgsyncthread", "wallsync":
            let (collection, field, children) = endpoint == "wallsync" ? ("wall", "created", "comments") : ("threads", "lastMessageAt", "messages")
            let nb = Int(queryValue(query, "nb") ?? "") ?? 20
            let all = sorted(collection, by: field)
            let page = all.prefix(nb).map { item -> JSONValue in
                var item = item
                let id = item["id"]?.stringValue ?? ""
                item[children] = .array(sorted(children, by: "created", parent: id).map { .object($0) })
                item["nomore"] = true
                return .object(item)
            }
            return ["date": date, "sync": false, "updated": .array(Array(page)), "deleted": [], "crop": false, "nomore": .bool(all.count <= nb)]
        case "familysync":
            let family = state.items["family/"]?[familyID]?.json ?? ["id": .string(familyID), "name": "Family", "pictureUrl": .null]
            let settings =
                state.items["settings/"]?[accountID]?.json ?? ["id": .string(accountID), "locale": .null, "timeZone": .null, "notifications": true]
            return [
                "date": date, "sync": false, "family": .object(family), "members": ["updated": .array(live("members")), "deleted": []],
                "accounts": ["updated": [["id": .string(accountID), "username": "alice", "displayName": "alice"]], "deleted": []],
                "settings": .object(settings),
            ]
        default:
            return nil
        }
    }

    static func queryValue(_ path: String, _ name: String) -> String? {
        guard let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") where pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
        return nil
    }
}
