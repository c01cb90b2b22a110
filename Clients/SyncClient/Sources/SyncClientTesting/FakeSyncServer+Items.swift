import Foundation
import SyncClient

extension FakeSyncServer {
    /// Item calls (`/contacts/c1`, `/threads/t1/messages/m1`, `/family`), sync endpoints and media, as the model says.
    func itemOrSync(_ state: inout State, _ method: String, _ path: String, query: String, body: JSONValue?, headers: [String: String]) -> HTTPAnswer
    {
        let parts = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        if method == "GET", parts.count == 1, let endpoint = model.endpoints.first(where: { $0.name == parts[0] }) {
            let sync = syncAnswer(&state, endpoint, query: query)
            return Self.json(200, sync, headers: ["ETag": "\"\(sync["date"]?.stringValue ?? "")\""])
        }
        if parts.count == 2, parts[0] == "media" {
            guard let data = state.media[parts[1]] else { return Self.problem(404, code: "not_found") }
            return HTTPAnswer(status: 200, headers: ["Content-Type": "application/octet-stream"], body: data)
        }
        let (collection, parent, id): (String, String, String)
        switch parts.count {
        case 1:
            guard let singleton = model[SyncCollection(parts[0])], singleton.kind == .singleton else { return Self.problem(404, code: "not_found") }
            (collection, parent, id) = (parts[0], "", singleton.scope == "account" ? accountID : familyID)
        case 2: (collection, parent, id) = (parts[0], "", parts[1])
        case 4: (collection, parent, id) = (parts[2], parts[1], parts[3])
        default: return Self.problem(404, code: "not_found")
        }
        guard let layout = model[SyncCollection(collection)], !layout.isReadOnly else { return Self.problem(404, code: "not_found") }
        let key = collection + "/" + parent
        let current = state.items[key]?[id]
        if let ifMatch = headers["If-Match"], ifMatch != "\"\(current?.version ?? -1)\"" { return Self.problem(412, code: "precondition_failed") }
        if headers["If-None-Match"] == "*", current != nil, method == "PUT" { return Self.problem(412, code: "precondition_failed") }
        func stored(_ item: Item) -> HTTPAnswer { Self.json(200, .object(item.json), headers: ["ETag": "\"\(item.version)\""]) }
        switch method {
        case "GET":
            guard let current else { return Self.problem(404, code: "not_found") }
            return stored(current)
        case "PUT":
            guard case .object(let object)? = body else { return Self.problem(400, code: "invalid_json") }
            return stored(Self.store(&state, layout, parent, id, object, author: accountID))
        case "PATCH":
            guard let current, case .object(let patch)? = body else { return Self.problem(current == nil ? 404 : 400, code: "not_found") }
            var merged = current.json
            for (field, value) in patch { merged[field] = value == .null ? nil : value }
            return stored(Self.store(&state, layout, parent, id, merged, author: accountID))
        case "DELETE":
            state.delete(key, id)
            return HTTPAnswer(status: 204, headers: [:], body: Data())
        default:
            return Self.problem(405, code: "method_not_allowed")
        }
    }

    /// The answer of a sync endpoint of the model: for a list or a singleton sync, what moved since a date this space
    /// gave (`sync: true`), else everything (`sync: false`); a paginated sync always answers its first page whole
    /// (`sync: false`: the protocol allows it, and it is exact).
    func syncAnswer(_ state: inout State, _ endpoint: SyncEndpoint, query: String) -> JSONValue {
        let date = JSONValue.string("fake.\(state.version)")
        let since = Self.since(query, state)
        func list(_ collection: SyncCollection) -> JSONValue {
            let (updated, deleted) = Self.changes(state, collection.rawValue + "/", since: since)
            return ["updated": .array(updated), "deleted": .array(deleted)]
        }
        func sorted(_ collection: SyncCollection, by field: String, parent: String = "") -> [JSONObject] {
            (state.items[collection.rawValue + "/" + parent] ?? [:]).values.map(\.json).sorted {
                let a = $0[field]?.stringValue ?? ""
                let b = $1[field]?.stringValue ?? ""
                return a != b ? a > b : ($0["id"]?.stringValue ?? "") > ($1["id"]?.stringValue ?? "")
            }
        }
        switch endpoint.shape {
        case .list(let collection):
            guard case .object(var answer) = list(collection.name) else { return [:] }
            answer["date"] = date
            answer["sync"] = .bool(since != nil)
            return .object(answer)
        case .paginated(let list):
            let nb = Int(Self.queryValue(query, "nb") ?? "") ?? 20
            let all = sorted(list.name, by: list.sortField ?? "created")
            let page = all.prefix(nb).map { item -> JSONValue in
                var item = item
                if let children = list.children {
                    let id = item["id"]?.stringValue ?? ""
                    item[children.rawValue] = .array(sorted(children, by: "created", parent: id).map { .object($0) })
                    item["nomore"] = true
                }
                return .object(item)
            }
            return ["date": date, "sync": false, "updated": .array(Array(page)), "deleted": [], "crop": false, "nomore": .bool(all.count <= nb)]
        case .bundle(let members):
            var answer: JSONObject = ["date": date, "sync": .bool(since != nil)]
            for member in members {
                switch member.kind {
                case .singleton:
                    // Null when unchanged since the date (protocol §5); its defaults when never written.
                    let id = member.scope == "account" ? accountID : familyID
                    let stored = state.items[member.name.rawValue + "/"]?[id]
                    if let since, (stored?.version ?? 0) <= since {
                        answer[member.name.rawValue] = .null
                    } else {
                        answer[member.name.rawValue] = .object(stored?.json ?? ["id": .string(id)])
                    }
                case _ where member.isReadOnly:
                    // The account's profile, which the fake never changes: sent whole only.
                    let profile: JSONValue = ["id": .string(accountID), "username": "alice", "displayName": "alice"]
                    answer[member.name.rawValue] = ["updated": since == nil ? [profile] : [], "deleted": []]
                default:
                    answer[member.name.rawValue] = list(member.name)
                }
            }
            return .object(answer)
        }
    }

    static func queryValue(_ path: String, _ name: String) -> String? {
        guard let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") where pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
        return nil
    }
}
