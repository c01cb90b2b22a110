import Foundation
import Testing

@testable import SyncClient

/// Every answer body of every golden scenario decodes into the SDK's answer types and typed models: the SDK and the
/// server cannot drift apart unnoticed.
@Suite("Golden answers decode")
struct GoldenDecodingTests {
    /// What a body was decoded as, for the counts.
    enum Kind: String { case problem, grant, profile, sync, paged, family, page, item, group, description, media, space }

    /// Decodes an answer of `method path` (with status) into its type; returns what it was, nil for no JSON body.
    static func decode(method: String, path: String, status: Int, body: JSONValue?, requestBody: JSONValue?) throws -> [Kind] {
        guard let body, !body.isNull, body.objectValue != nil else { return [] }
        if status >= 300 {
            _ = try body.decode(Problem.self)
            return [.problem]
        }
        let route = path.split(separator: "?").first.map(String.init) ?? path
        let segments = route.split(separator: "/").dropFirst(2).map(String.init)
        if segments.first == "spaces" {
            // The space calls (protocol §15); any other path under `/spaces/{id}/` is a path of that space.
            switch (segments.count, segments.count > 2 ? segments[2] : "") {
            case (1, _), (2, _):
                _ = try body.decode(SpaceInfo.self)
                return [.space]
            case (3, "invitations"):
                _ = try body.decode(SpaceInvitation.self)
                return [.space]
            case (4, "memberships") where method == "PUT" && body["role"]?.stringValue.map(["owner", "member", "reader"].contains) == true:
                _ = try body.decode(SpaceMember.self)
                return [.space]
            default:
                let rest = segments.dropFirst(2).joined(separator: "/")
                let query = path.contains("?") ? "?" + path.split(separator: "?", maxSplits: 1)[1] : ""
                return try decode(method: method, path: "/api/v1/" + rest + query, status: status, body: body, requestBody: requestBody)
            }
        }
        switch (method, segments.first ?? "") {
        case ("POST", "invitations"):
            _ = try body.decode(SpaceInfo.self)
            return [.space]
        case ("GET", ""):
            _ = try body.decode(ServerDescription.self)
            return [.description]
        case ("POST", "signup"), ("POST", "login"):
            _ = try body.decode(Grant.self)
            return [.grant]
        case ("POST", "accounts"):
            _ = try body.decode(AccountProfile.self)
            return [.profile]
        case ("POST", "media"):
            _ = try body.decode(MediaUploaded.self)
            return [.media]
        case ("POST", "group"):
            let group = try body.decode(GroupAnswer.self)
            // Read loosely: some examples send malformed sub-requests on purpose.
            let requests = requestBody?["requests"]?.arrayValue ?? []
            #expect(group.responses.map(\.id) == requests.map { $0["id"]?.stringValue ?? "" }, "responses come in request order")
            var kinds: [Kind] = [.group]
            for (request, response) in zip(requests, group.responses) {
                kinds += try decode(
                    method: request["method"]?.stringValue ?? "", path: request["url"]?.stringValue ?? "", status: response.status,
                    body: response.body, requestBody: request["body"])
            }
            return kinds
        case ("GET", "ctcsync"), ("GET", "evtsync"), ("GET", "plcsync"):
            let answer = try body.decode(SyncAnswer.self)
            let collection: SyncCollection = ["ctcsync": .contacts, "evtsync": .events, "plcsync": .places][segments[0]]!
            for item in answer.updated { try decodeItem(collection, item) }
            return [.sync]
        case ("GET", "msgsyncthread"), ("GET", "wallsync"):
            let answer = try body.decode(PagedSyncAnswer.self)
            for item in answer.updated { try decodeParent(segments[0] == "wallsync" ? .wall : .threads, item) }
            return [.paged]
        case ("GET", "familysync"):
            let answer = try body.decode(JSONObject.self)
            if let family = answer["family"]?.objectValue { _ = try JSONValue.object(family).decode(Family.self) }
            if let settings = answer["settings"]?.objectValue { _ = try JSONValue.object(settings).decode(Settings.self) }
            for item in answer["members"]?["updated"]?.arrayValue ?? [] { _ = try item.decode(Member.self) }
            for item in answer["accounts"]?["updated"]?.arrayValue ?? [] { _ = try item.decode(AccountProfile.self) }
            return [.family]
        case (_, let first):
            guard let collection = ServerModel.family[SyncCollection(first)] else {
                Issue.record("no answer type for \(method) \(path)")
                return []
            }
            let child: SyncCollection? = segments.count >= 3 ? (segments[2] == "messages" ? .messages : .comments) : nil
            let isList = (segments.count == 1 && collection.kind == .paginated) || segments.count == 3
            if isList {
                let page = try body.decode(PageAnswer.self)
                for item in page.items {
                    if let child { try decodeItem(child, item) } else { try decodeParent(collection.name, item) }
                }
                return [.page]
            }
            try decodeItem(child ?? collection.name, body.objectValue!)
            return [.item]
        }
    }

    static func decodeItem(_ collection: SyncCollection, _ item: JSONObject) throws {
        var object = item
        object[parentKey] = "parent"
        let types: [SyncCollection: any SyncModel.Type] = [
            .contacts: Contact.self, .events: Event.self, .places: Place.self, .threads: MessageThread.self, .messages: Message.self,
            .wall: WallPost.self, .comments: Comment.self, .family: Family.self, .members: Member.self, .settings: Settings.self,
            .accounts: AccountProfile.self,
        ]
        _ = try JSONValue.object(object).decode(types[collection]!)
    }

    static func decodeParent(_ collection: SyncCollection, _ item: JSONObject) throws {
        try decodeItem(collection, item)
        let children = try #require(ServerModel.family[collection]?.children)
        for child in item[children.rawValue]?.arrayValue ?? [] {
            try decodeItem(children, try #require(child.objectValue))
        }
    }

    @Test("every answer body of every example", arguments: try Golden.files())
    func everyAnswer(file: String) throws {
        var kinds: [Kind] = []
        var bodies = 0
        for step in try Golden.steps(file) {
            if step.body?.objectValue != nil { bodies += 1 }
            kinds += try Self.decode(method: step.method, path: step.path, status: step.status, body: step.body, requestBody: step.requestBody)
        }
        #expect(kinds.count >= bodies, "every JSON body of \(file) decoded into a type")
    }

    @Test("all kinds of answers are covered by the examples")
    func coverage() throws {
        var kinds = Set<Kind>()
        for file in try Golden.files() {
            for step in try Golden.steps(file) {
                kinds.formUnion(
                    try Self.decode(method: step.method, path: step.path, status: step.status, body: step.body, requestBody: step.requestBody))
            }
        }
        #expect(kinds == Set([.problem, .grant, .profile, .sync, .paged, .family, .page, .item, .group, .description, .media, .space]))
    }

    @Test("the verify answer (protocol §11)")
    func verifyAnswer() throws {
        let text = #"{"date":"d1","lists":{"contacts":{"count":2,"digest":"\#(String(repeating: "a", count: 64))"}}}"#
        let answer = try JSONValue.parse(text).decode(VerifyAnswer.self)
        #expect(answer.lists["contacts"]?.count == 2)
    }
}
