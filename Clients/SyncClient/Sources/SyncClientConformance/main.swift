import Foundation
import Logging
import SyncClient

// The Swift SDK's adapter for the conformance suite (Clients/conformance): one JSON command a line on standard input,
// one JSON answer a line on standard output, `{"ok": true, "result": …}` or `{"ok": false, "error": {"kind", "status",
// "code", "message"}}`. The TypeScript client's adapter (Clients/ts/test/conformance-adapter.ts) takes the same
// commands; Clients/conformance/README.md lists them.

/// The typed models of the default data model, for `edit` (a typed save: a PATCH of the fields that changed).
let typedSavers: [String: @Sendable (SyncClient, JSONValue) async throws -> Void] = [
    "contacts": { try await $0.save(try $1.decode(Contact.self)) },
    "events": { try await $0.save(try $1.decode(Event.self)) },
    "places": { try await $0.save(try $1.decode(Place.self)) },
    "threads": { try await $0.save(try $1.decode(MessageThread.self)) },
    "messages": { try await $0.save(try $1.decode(Message.self)) },
    "wall": { try await $0.save(try $1.decode(WallPost.self)) },
    "comments": { try await $0.save(try $1.decode(Comment.self)) },
    "family": { try await $0.save(try $1.decode(Family.self)) },
    "members": { try await $0.save(try $1.decode(Member.self)) },
    "settings": { try await $0.save(try $1.decode(Settings.self)) },
]

func number(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }

func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }

/// A command's string argument, or `invalid`.
func argument(_ request: JSONObject, _ name: String) throws -> String {
    guard let value = request[name]?.stringValue else { throw SyncClientError.invalid("missing argument \(name)") }
    return value
}

func report(_ report: SyncReport) -> JSONValue {
    [
        "pushed": number(report.pushed), "failed": number(report.failed), "conflicts": number(report.conflicts),
        "replaced": strings(report.replaced.sorted()), "date": report.date.map { .string($0) } ?? .null,
    ]
}

func operation(_ kind: PendingOperation.Kind, _ collection: SyncCollection, _ id: String, _ parent: String?) -> JSONObject {
    var out: JSONObject = ["op": .string(kind.rawValue), "collection": .string(collection.rawValue), "id": .string(id)]
    if let parent { out["parent"] = .string(parent) }
    return out
}

/// An error as the harness compares it: the SDK's kind, and the server's status and code when there are.
func describe(_ error: any Error) -> JSONValue {
    guard let error = error as? SyncClientError else { return ["kind": "local", "message": .string("\(error)")] }
    var out: JSONObject = ["message": .string(error.description)]
    switch error {
    case .offline: out["kind"] = "offline"
    case .unavailable(_, let code, _): (out["kind"], out["code"]) = ("unavailable", .string(code.rawValue))
    case .server(_, let code, _): (out["kind"], out["code"]) = ("server", .string(code.rawValue))
    case .notSignedIn: out["kind"] = "notSignedIn"
    case .invalidCredentials: out["kind"] = "invalidCredentials"
    case .throttled(let code, _): (out["kind"], out["code"]) = ("throttled", .string(code.rawValue))
    case .unpushedWrites: out["kind"] = "unpushedWrites"
    case .invalid: out["kind"] = "invalid"
    case .spaceRemoved: out["kind"] = "spaceRemoved"
    case .idTokenRefused(let check, _): (out["kind"], out["check"]) = ("idTokenRefused", check.map { .string($0.rawValue) } ?? .null)
    case .local: out["kind"] = "local"
    }
    if let status = error.status { out["status"] = number(status) }
    return .object(out)
}

/// Runs one command.
@MainActor func run(_ op: String, _ request: JSONObject) async throws -> JSONValue {
    if op == "open" {
        guard let url = URL(string: try argument(request, "server")) else { throw SyncClientError.invalid("bad server URL") }
        var configuration = SyncClientConfiguration(serverURL: url, replicaPath: try argument(request, "replica"))
        // Standard output carries the answers alone.
        configuration.makeLogger = { Logger(label: $0, factory: { label in StreamLogHandler.standardError(label: label) }) }
        configuration.pushDelay = nil
        configuration.retryPolicy = RetryPolicy(attempts: 1)
        if let size = request["pageSize"]?.intValue { configuration.pageSize = size }
        if let size = request["maxChildren"]?.intValue { configuration.maxChildren = size }
        if let bytes = request["answerMaxBytes"]?.intValue { (configuration.answerMaxBytes, configuration.syncAnswerMaxBytes) = (bytes, bytes) }
        configuration.space = request["space"]?.stringValue
        Adapter.client = try SyncClient(configuration: configuration)
        return ["sdk": "swift"]
    }
    guard let client = Adapter.client else { throw SyncClientError.invalid("no client: send open first") }
    let parent = request["parent"]?.stringValue
    switch op {
    case "close":
        await client.stopLive()
        Adapter.client = nil
        return .null
    case "signUp":
        try await client.signUp(
            family: try argument(request, "family"), username: try argument(request, "username"), password: try argument(request, "password"),
            discardingPendingWrites: request["discard"]?.boolValue ?? false)
        return .null
    case "logIn":
        try await client.logIn(
            username: try argument(request, "username"), password: try argument(request, "password"),
            discardingPendingWrites: request["discard"]?.boolValue ?? false)
        return .null
    case "signIn":
        let signedIn = try await client.signIn(idToken: try argument(request, "idToken"), space: request["space"]?.stringValue)
        return ["created": .bool(signedIn.created), "spaces": strings(signedIn.spaces.map(\.name).sorted())]
    case "acceptInvitation":
        let space = try await client.acceptInvitation(code: try argument(request, "code"))
        return ["id": .string(space.id), "role": .string(space.role)]
    case "put":
        guard let item = request["item"]?.objectValue else { throw SyncClientError.invalid("put needs an item") }
        try await client.save(SyncCollection(try argument(request, "collection")), id: try argument(request, "id"), parent: parent, json: item)
        return .null
    case "edit":
        let collection = try argument(request, "collection")
        let id = try argument(request, "id")
        guard let save = typedSavers[collection] else { throw SyncClientError.invalid("no typed model for \(collection)") }
        var item = try client.item(SyncCollection(collection), id: id, parent: parent) ?? ["id": .string(id)]
        for (key, value) in request["fields"]?.objectValue ?? [:] { item[key] = value.isNull ? nil : value }
        if let parent { item["_parent"] = .string(parent) }
        try await save(client, .object(item))
        return .null
    case "delete":
        try await client.delete(SyncCollection(try argument(request, "collection")), id: try argument(request, "id"), parent: parent)
        return .null
    case "logOut":
        try await client.logOut(
            discardingPendingWrites: request["discard"]?.boolValue ?? false, erasingFailedWrites: request["eraseFailed"]?.boolValue ?? false)
        return .null
    case "setConflictHandler":
        let resolution: ConflictResolution
        switch request["resolution"]?.stringValue {
        case "keepServer": resolution = .keepServer
        case "keepLocal": resolution = .keepLocal
        default:
            guard let merged = request["merged"]?.objectValue else { throw SyncClientError.invalid("resolution: keepServer, keepLocal, or merged") }
            resolution = .merged(merged)
        }
        client.setConflictHandler(SyncCollection(try argument(request, "collection"))) { _ in resolution }
        return .null
    case "upload":
        guard let bytes = Data(base64Encoded: try argument(request, "base64")) else { throw SyncClientError.invalid("base64: not base64") }
        return ["url": .string(try await client.upload(bytes, contentType: try argument(request, "contentType")))]
    case "media":
        let file = try await client.media(try argument(request, "url"))
        return ["base64": .string(try Data(contentsOf: file).base64EncodedString())]
    case "failedUploads":
        return .array(
            try client.failedUploads().map {
                ["url": .string($0.url), "contentType": .string($0.contentType), "status": number($0.status), "code": .string($0.code.rawValue)]
            })
    case "startLive":
        client.startLive()
        return .null
    case "stopLive":
        await client.stopLive()
        return .null
    case "waitFor":
        try await waitFor(
            client, SyncCollection(try argument(request, "collection")), id: try argument(request, "id"), parent: parent, request: request)
        return .null
    case "sync": return report(try await client.sync())
    case "push": return report(try await client.push())
    case "verify":
        let verified = try await client.verify()
        return ["checked": strings(verified.checked.sorted()), "repaired": strings(verified.repaired.sorted())]
    case "loadMore": return ["nomore": .bool(try await client.loadMore(SyncCollection(try argument(request, "list")), parent: parent))]
    case "hasAll": return ["nomore": .bool(client.hasAll(SyncCollection(try argument(request, "list")), parent: parent))]
    case "items": return .array(try client.items(SyncCollection(try argument(request, "collection")), parent: parent).map { .object($0) })
    case "pending":
        return .array(try client.pendingOperations().map { .object(operation($0.kind, $0.collection, $0.id, $0.parent)) })
    case "failed":
        return .array(
            try client.failedOperations().map {
                var out = operation($0.kind, $0.collection, $0.id, $0.parent)
                (out["status"], out["code"]) = (number($0.status), .string($0.code.rawValue))
                return .object(out)
            })
    case "conflicts":
        return .array(
            try client.conflictJournal().map {
                var out: JSONObject = [
                    "collection": .string($0.collection.rawValue), "id": .string($0.itemID), "resolution": .string($0.resolution.rawValue),
                    "fields": strings($0.fields.sorted()),
                ]
                if let parent = $0.parent { out["parent"] = .string(parent) }
                return .object(out)
            })
    default: throw SyncClientError.invalid("unknown op \(op)")
    }
}

/// Waits until the visible items hold `id` (or no longer do, with `absent`), as the app's observation sees them; fails
/// after `timeout` seconds (default 30).
func waitFor(_ client: SyncClient, _ collection: SyncCollection, id: String, parent: String?, request: JSONObject) async throws {
    let absent = request["absent"]?.boolValue ?? false
    let seconds = request["timeout"]?.intValue ?? 30
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            for try await items in client.observeItems(collection, parent: parent)
            where items.contains(where: { $0["id"]?.stringValue == id }) != absent {
                return
            }
            throw SyncClientError.invalid("the observation of \(collection) ended")
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw SyncClientError.invalid("\(id) did not \(absent ? "leave" : "arrive") within \(seconds) s")
        }
        try await group.next()
        group.cancelAll()
    }
}

/// The adapter's state.
@MainActor enum Adapter {
    /// The client the commands drive, opened by `open` and closed by `close`.
    static var client: SyncClient?
}

while let line = readLine() {
    var answer: JSONValue
    do {
        guard let request = try JSONValue.parse(line).objectValue, let op = request["op"]?.stringValue else {
            throw SyncClientError.invalid("a command is a JSON object with op")
        }
        answer = ["ok": true, "result": try await run(op, request)]
    } catch {
        answer = ["ok": false, "error": describe(error)]
    }
    FileHandle.standardOutput.write(Data((answer.text + "\n").utf8))
}
