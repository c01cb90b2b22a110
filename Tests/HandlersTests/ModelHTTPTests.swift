import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import SyncModelTools
import TestSupport
import Testing

/// `GET /api/v1/model` and `syncapi model check` (protocol §12).
@Suite("The served model", .sharingTheMachine)
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

    @Test("GET /api/v1/openapi.json is generated from the served model: its paths are the model's")
    func openAPI() async throws {
        let recipes = try DataModel(contentsOf: DataModelPaths.recipes)
        try await TestApp.run(.sqlite, configure: { $0.model = recipes }) { client in
            let answer = try await APIClient(client: client).call(.get, "/api/v1/openapi.json")
            #expect(answer.status == .ok && answer.json?["openapi"] == .string("3.1.0"))
            guard case .object(let paths)? = answer.json?["paths"] else { throw TestFailure("no paths: \(answer.body)") }
            // The model's paths, between the accounts' and spaces' and the shared sync calls of every model; then every
            // path of a space again under `/spaces/{spaceId}`.
            let scoped = [
                "/recipes/{id}", "/rcpsync", "/boards/{id}", "/brdsync", "/boards", "/boards/{id}/pins", "/boards/{id}/pins/{childId}",
                "/preferences", "/prefsync",
            ]
            let shared = ["/media", "/media/{sha256}", "/verify"]
            #expect(
                paths.map(\.key)
                    == [
                        "/health", "/ready", "/metrics", "/api/v1/", "/api/v1/model", "/api/v1/signup", "/api/v1/login", "/api/v1/token",
                        "/api/v1/logout",
                        "/api/v1/password", "/api/v1/accounts", "/api/v1/accounts/{accountId}", "/api/v1/spaces", "/api/v1/spaces/{spaceId}",
                        "/api/v1/spaces/{spaceId}/invitations", "/api/v1/spaces/{spaceId}/invitations/{invitationId}",
                        "/api/v1/invitations/accept", "/api/v1/spaces/{spaceId}/memberships",
                        "/api/v1/spaces/{spaceId}/memberships/{accountId}", "/api/v1/spaces/{spaceId}/members",
                        "/api/v1/spaces/{spaceId}/members/{accountId}",
                    ] + (scoped + shared).map { "/api/v1" + $0 } + ["/api/v1/group", "/api/v1/changes"]
                    + (scoped + shared + ["/changes"]).map { "/api/v1/spaces/{spaceId}" + $0 })
            // Nothing of the family app: no schema, path or parameter names its collections.
            for word in ["contacts", "ctcsync", "Contacts", "familysync", "wallsync", "maxmessages"] {
                #expect(!answer.body.contains(word), "\(word) in the recipes document")
            }
            // `/verify` takes the model's paginated collection.
            guard case .array(let verify)? = paths.first(where: { $0.key == "/api/v1/verify" })?.value["get"]?["parameters"] else {
                throw TestFailure("no verify parameters")
            }
            #expect(verify.compactMap { $0["name"]?.stringValue } == ["boardsLastId"])
            let servings = answer.json?["components"]?["schemas"]?["Recipes"]?["properties"]?["servings"]
            #expect(servings?["minimum"] == .number(1) && servings?["maximum"] == .number(100))
        }
    }

    @Test("syncapi model swift: the types compile in Swift 6 and keep members the app does not know")
    func swiftTypes() async throws {
        // Two compilations: CPU-heavy on 2 cores, so one heavy test at a time.
        try await HeavyTestGate.shared.run { try await Self.compileTypes() }
    }

    static func compileTypes() async throws {
        let folder = try ProcessTests.temporaryFolder()
        let binary = try BuiltBinary.path()
        let types = try await TestPostgres.run([binary, "model", "swift", DataModelPaths.recipes])
        #expect(types.contains("public struct Board: Codable, Identifiable, Hashable, Sendable"))
        try types.write(toFile: folder + "/Recipes.swift", atomically: true, encoding: .utf8)
        try #"""
        import Foundation
        let json = #"{"id":"b1","name":"Dinner","lastPinAt":"2026-11-23T20:02:42.600Z","modified":"2026-11-23T20:02:42.600Z","pins":[],"color":"red"}"#
        var board = try JSONDecoder().decode(Board.self, from: Data(json.utf8))
        board.name = "Supper"
        let out = String(decoding: try JSONEncoder().encode(board), as: UTF8.self)
        let soup = Recipe(id: "r1", title: "Soup")
        print(board.lastPinAt != nil, board.unknownFields.keys.sorted(), out.contains(#""color":"red""#), out.contains("Supper"), soup.servings)
        """#.write(toFile: folder + "/main.swift", atomically: true, encoding: .utf8)
        _ = try await TestPostgres.run([
            "swiftc", "-swift-version", "6", "-warnings-as-errors", "-o", folder + "/prog", folder + "/Recipes.swift", folder + "/main.swift",
        ])
        let output = try await TestPostgres.run([folder + "/prog"])
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == #"true ["color"] true true 2"#)
        // The inspections model (every field type) compiles too.
        let inspections = DataModelPaths.root.appendingPathComponent("models/examples/inspections.json").path
        try await TestPostgres.run([binary, "model", "swift", inspections]).write(
            toFile: folder + "/Inspections.swift", atomically: true, encoding: .utf8)
        _ = try await TestPostgres.run(["swiftc", "-swift-version", "6", "-warnings-as-errors", "-typecheck", folder + "/Inspections.swift"])
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
