import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// `GET /api/v1/model` and `syncapi model check` (protocol §12).
@Suite("The served model")
struct ModelHTTPTests {
    @Test("GET /api/v1/model answers the normalized default model without a token; its digest is the description's")
    func servedModel() async throws {
        try await TestApp.run(.sqlite) { client in
            let api = APIClient(client: client)
            let answer = try await api.call(.get, "/api/v1/model")
            #expect(answer.status == .ok)
            let json = try #require(answer.json)
            let digest = try #require(json["digest"]?.stringValue)
            #expect(try await api.call(.get, "/api/v1/").json?["modelDigest"] == .string(digest))
            // The answer reads back as the same model.
            #expect(try DataModel(json: Array(answer.body.utf8)).digest == digest)
            #expect(json["collections"]?["contacts"]?["sync"] == .string("ctcsync"))
        }
    }

    @Test("syncapi model check: ok with the digest for a valid file, one line and exit 1 for a bad one")
    func checkCommand() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let bad = folder + "/bad.json"
        try #"{"model":"m","collections":{"pins":{"kind":"child","parent":"boards"}}}"#.write(toFile: bad, atomically: true, encoding: .utf8)
        let good = try await TestPostgres.run([try BuiltBinary.path(), "model", "check", DataModelPaths.recipes])
        #expect(good.hasPrefix("ok: model recipes, 4 collections"))
        let refused = try await TestPostgres.run(["sh", "-c", "\(try BuiltBinary.path()) model check \(bad) 2>&1; echo rc=$?"])
        #expect(refused.contains(#"collection "pins": "parent" must name a paginated collection"#) && refused.contains("rc=1"))
    }
}

/// Where the repository's model files are.
enum DataModelPaths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let recipes = root.appendingPathComponent("models/examples/recipes.json").path
}
