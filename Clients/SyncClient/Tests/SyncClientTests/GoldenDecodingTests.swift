import Foundation
import Testing

@testable import SyncClient

/// Every golden answer of `docs/api/examples/` (the files the server's contract tests replay) decodes into the SDK's
/// typed models: the SDK and the server cannot drift apart.
@Suite("Golden answers decode into the models")
struct GoldenDecodingTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../docs/api/examples")
        .standardized

    /// Decodes an item into the model of its collection (children get their parent's id as `_parent`).
    static func decode(_ collection: SyncCollection, _ item: JSONValue, parent: String = "p") throws {
        var object = try #require(item.objectValue, "\(collection): \(item)")
        object["_parent"] = .string(parent)
        let data = Data(JSONValue.object(object).text.utf8)
        let types: [SyncCollection: any SyncModel.Type] = [
            .contacts: Contact.self, .events: Event.self, .places: Place.self, .threads: MessageThread.self, .messages: Message.self,
            .wall: WallPost.self, .comments: Comment.self, .family: Family.self, .members: Member.self, .settings: Settings.self,
            .accounts: AccountProfile.self,
        ]
        _ = try JSONDecoder().decode(types[collection]!, from: data)
    }

    /// The collection of a paginated list and its children, with their children decoded too.
    static func decodeParents(_ collection: SyncCollection, _ items: [JSONValue]) throws -> Int {
        var count = 0
        for item in items {
            try decode(collection, item)
            count += 1
            for child in item[collection.childCollection!.rawValue]?.arrayValue ?? [] {
                try decode(collection.childCollection!, child)
                count += 1
            }
        }
        return count
    }

    @Test("sync answers, pages and items of every example")
    func everyExample() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.examples.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 10)
        var decoded = 0
        for file in files {
            let scenario = try JSONValue.parse(Data(contentsOf: Self.examples.appendingPathComponent(file)))
            for step in scenario["steps"]?.arrayValue ?? [] {
                guard case .number(let status)? = step["response"]?["status"], status == 200 || status == 201,
                    let path = step["request"]?["path"]?.stringValue?.split(separator: "?").first.map(String.init),
                    let body = step["response"]?["body"]
                else { continue }
                let segments = path.split(separator: "/").dropFirst(2).map(String.init)
                switch segments.first {
                case "ctcsync", "evtsync", "plcsync":
                    let collection: SyncCollection = ["ctcsync": .contacts, "evtsync": .events, "plcsync": .places][segments[0]]!
                    for item in body["updated"]?.arrayValue ?? [] {
                        try Self.decode(collection, item)
                        decoded += 1
                    }
                case "msgsyncthread": decoded += try Self.decodeParents(.threads, body["updated"]?.arrayValue ?? [])
                case "wallsync": decoded += try Self.decodeParents(.wall, body["updated"]?.arrayValue ?? [])
                case "familysync":
                    if let family = body["family"], family != .null { try Self.decode(.family, family) }
                    if let settings = body["settings"], settings != .null { try Self.decode(.settings, settings) }
                    for item in body["members"]?["updated"]?.arrayValue ?? [] { try Self.decode(.members, item) }
                    for item in body["accounts"]?["updated"]?.arrayValue ?? [] { try Self.decode(.accounts, item) }
                    decoded += 1
                case "threads" where segments.count == 1: decoded += try Self.decodeParents(.threads, body["items"]?.arrayValue ?? [])
                case "wall" where segments.count == 1: decoded += try Self.decodeParents(.wall, body["items"]?.arrayValue ?? [])
                case "contacts", "events", "places", "members", "family", "settings", "threads", "wall":
                    guard let collection = SyncCollection(rawValue: segments[0]) else { continue }
                    if segments.count == 4 {
                        let child: SyncCollection = segments[2] == "messages" ? .messages : .comments
                        if body["items"] != nil {
                            for item in body["items"]?.arrayValue ?? [] { try Self.decode(child, item) }
                        } else {
                            try Self.decode(child, body)
                        }
                    } else if segments.count <= 2, body["id"] != nil {
                        try Self.decode(collection, body)
                    }
                    decoded += 1
                default: continue
                }
            }
        }
        #expect(decoded > 50, "decoded \(decoded) items")
    }
}
