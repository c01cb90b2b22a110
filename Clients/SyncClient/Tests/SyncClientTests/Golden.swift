import Foundation
import GRDB
import Testing

@testable import SyncClient

/// The golden scenarios of `docs/api/examples/` (the server's exact answers), read from the repository.
enum Golden {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../docs/api/examples")
        .standardized

    /// One request and the server's answer.
    struct Step {
        var method: String
        var path: String
        var status: Int
        var body: JSONValue?
        var requestBody: JSONValue?
    }

    static func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
    }

    static func steps(_ file: String) throws -> [Step] {
        // `<time>` stands for a server time: a real one here, since the models read times as `Date`.
        let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            .replacingOccurrences(of: "\"<time>\"", with: "\"2026-11-22T00:32:08.332Z\"")
        let scenario = try JSONValue.parse(Data(text.utf8))
        return (scenario["steps"]?.arrayValue ?? []).map { step in
            Step(
                method: step["request"]?["method"]?.stringValue ?? "GET", path: step["request"]?["path"]?.stringValue ?? "",
                status: step["response"]?["status"]?.intValue ?? 0, body: step["response"]?["body"], requestBody: step["request"]?["body"])
        }
    }

    /// The body of step `index` of a file, decoded.
    static func answer<T: Decodable>(_ file: String, _ index: Int, as type: T.Type) throws -> T {
        let step = try steps(file)[index]
        return try #require(step.body).decode(type)
    }

    /// A fresh replica in a temporary file.
    static func replica() throws -> Replica {
        try Replica(path: Scratch.path("syncclient-test-"))
    }

    static func ids(_ replica: Replica, _ collection: SyncCollection, parent: String? = nil) throws -> [String] {
        try replica.pool.read { db in try Replica.visibleItems(db, collection, parent: parent).compactMap { $0["id"]?.stringValue } }
    }
}
