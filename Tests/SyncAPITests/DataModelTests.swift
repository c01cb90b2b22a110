import Foundation
import SyncAPI
import SyncModelTools
import TestSupport
import Testing

/// The data model file (protocol §12): the default model is `models/family.json` and is what the server serves; a
/// model the server cannot serve is refused with a message naming the collection and the field.
@Suite("Data model file", .sharingTheMachine)
struct DataModelTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the binary's default model is models/family.json (run scripts/embed-model after editing it)")
    func embeddedIsTheFile() throws {
        let file = try String(contentsOf: Self.root.appendingPathComponent("models/family.json"), encoding: .utf8)
        #expect(file == DataModel.familyFile + "\n")
        #expect(Collections.model.name == "family")
        #expect(
            Collections.writable.map(\.name) == [
                "contacts", "events", "places", "threads", "messages", "wall", "comments", "family", "members", "settings",
            ])
    }

    @Test("docs/api/openapi.yaml is the generated document of the default model (`syncapi model openapi --yaml --examples`)")
    func openAPIFileIsGenerated() throws {
        let file = try String(contentsOf: Self.root.appendingPathComponent("docs/api/openapi.yaml"), encoding: .utf8)
        let scenarios = try DataModel.scenarios(inFolder: Self.root.appendingPathComponent("docs/api/examples").path)
        let generated = YAMLWriter.encode(Collections.model.openAPI(version: SyncAPIVersion.string, examples: scenarios))
        #expect(
            file == generated,
            "regenerate: swift run syncapi model openapi --yaml --examples docs/api/examples models/family.json > docs/api/openapi.yaml")
        // What the server serves is the same document without the links to the golden files.
        let served = Collections.model.openAPI(version: SyncAPIVersion.string)
        #expect(served["paths"]?["/api/v1/ctcsync"] != nil && served["components"]?["examples"] == nil)
        #expect(served["components"]?["schemas"]?["CtcsyncAnswer"] != nil && served["paths"]?["/api/v1/group"] != nil)
    }

    @Test("the SDK's typed models are the generated types of the default model (scripts/generate-sdk-models)")
    func sdkModelsAreGenerated() throws {
        let path = "Clients/SyncClient/Sources/SyncClient/Models/FamilyModels.swift"
        let file = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        let names = ["threads": "MessageThread", "wall": "WallPost", "settings": "Settings"]
        #expect(file == Collections.model.swiftSource(typeNames: names, target: .inSDK), "run scripts/generate-sdk-models")
    }

    @Test("the SDK's error codes are the server's (scripts/generate-sdk-models)")
    func sdkErrorCodesAreGenerated() throws {
        let path = "Clients/SyncClient/Sources/SyncClient/Client/ServerErrorCode.swift"
        let file = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        #expect(file == ServerErrorCodeSource.render(), "run scripts/generate-sdk-models")
    }

    @Test("the default model declares what §2–§5 say: kinds, order, children, filter, members inside familysync")
    func familyModel() throws {
        #expect(Collections.threads.sortKey == .lastChildCreated(field: "lastMessageAt") && Collections.threads.childName == "messages")
        #expect(Collections.wall.filterField == "type" && Collections.wall.authored && Collections.wall.sortKey == .created)
        #expect(Collections.messages.kind == .child(parent: "threads") && Collections.messages.authored)
        #expect(Collections.members.changesFamily && Collections.members.syncEndpoint == nil)
        #expect(Collections.settings.kind == .singleton(perAccount: true) && Collections.family.kind == .singleton(perAccount: false))
        #expect(Collections.contacts.syncEndpoint == "ctcsync")
        // Rules from the file, with §2's messages.
        #expect(throws: SyncError.invalidField("firstName", "firstName or lastName is required.")) {
            try Collections.contacts.schema.canonicalContent(of: .object([("notes", .string("x"))]), pathID: "c1")
        }
        #expect(throws: SyncError.invalidField("end", "end must not be before start.")) {
            try Collections.events.schema.canonicalContent(
                of: .object([("title", .string("t")), ("start", .string("2026-01-02T00:00:00Z")), ("end", .string("2026-01-01T00:00:00Z"))]),
                pathID: "e1")
        }
    }

    @Test("the recipes example of §12 is a valid model; its normalized form has every implied value and a stable digest")
    func recipes() throws {
        let model = try DataModel(contentsOf: Self.root.appendingPathComponent("models/examples/recipes.json").path)
        #expect(model.collections.map(\.name) == ["recipes", "boards", "pins", "preferences"])
        let normalized = model.normalized
        #expect(normalized["collections"]?["recipes"]?["fields"]?["title"]?["maxLength"] == .number(200))
        #expect(normalized["collections"]?["pins"]?["fields"]?["at"]?["maxLength"] == .number(256))
        #expect(normalized["collections"]?["recipes"]?["fields"]?["servings"]?["minimum"] == .number(1))
        #expect(normalized["digest"] == .string(model.digest) && model.digest.count == 64)
        // Reformatting the file (here: the normalized text itself) never changes the digest.
        let again = try DataModel(json: Array(JSONWriter.encode(normalized).utf8))
        #expect(again.digest == model.digest)
        let servings = try #require(model.specs.first { $0.name == "recipes" })
        #expect(throws: SyncError.self) {
            try servings.schema.canonicalContent(of: .object([("title", .string("Soup")), ("servings", .number(2.5))]), pathID: "r1")
        }
        let soup = try servings.schema.canonicalContent(of: .object([("title", .string("Soup"))]), pathID: "r1")
        #expect(soup.first { $0.key == "servings" }?.value == .number(2) && soup.first { $0.key == "vegetarian" }?.value == .bool(false))
    }

    @Test(
        "a model the server cannot serve is refused, naming the collection and the field",
        arguments: [
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"x":{"type":"text"}}}}}"#,
                #"collection "a", field "x": unknown type "text""#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"child","parent":"b","fields":{}}}}"#,
                #"collection "a": "parent" must name a paginated collection"#
            ),
            (
                #"{"model":"m","collections":{"group":{"kind":"list","sync":"gs"}}}"#,
                #"collection "group": the name is reserved for a path of the API"#
            ),
            (
                #"{"model":"m","collections":{"spaces":{"kind":"list","sync":"ss"}}}"#,
                #"collection "spaces": the name is reserved for a path of the API"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","access":{"write":"author"}}}}"#,
                #"collection "a": write "author" needs "authored": true (the server records each item's author)"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","access":{"read":"admin"}}}}"#,
                #"collection "a": access "read" must be one of reader, member, owner"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","access":{"read":"reader","delete":"owner"}}}}"#,
                #""access" of collection "a": unknown key "delete" (known: read, write)"#
            ),
            (
                #"{"model":"m","collections":{"s":{"kind":"singleton","scope":"account","sync":"ss","access":{"read":"owner"}}}}"#,
                #"collection "s": an account-scoped singleton is its account's own: no "access""#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"media"}}}"#,
                #"collection "a": sync endpoint "media" must be a name of [a-z][A-Za-z0-9]{0,31}, not a reserved path"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"n":{"type":"integer","minimum":1,"default":0}}}}}"#,
                #"collection "a", field "n": the default is outside the field's own limits"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"n":{"type":"string","required":true,"default":"x"}}}}}"#,
                #"collection "a", field "n": "required" and "default" cannot go together"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"n":{"type":"string","maxLenght":5}}}}}"#,
                #"collection "a", field "n": unknown key "maxLenght" (known: default, enum, format, maxLength, required, type)"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"author":{"type":"string"}}}}}"#,
                #"collection "a", field "author": the server sets this name"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as"},"b":{"kind":"list","sync":"as"}}}"#,
                #"collection "b": sync endpoint "as" is shared: only singletons (with lists) share one"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"paginated","sync":"as","order":"created","filter":"t","fields":{"t":{"type":"string"}}}}}"#,
                #"collection "a", field "t": the filter must name a string field with an enum"#
            ),
            (
                #"{"model":"m","collections":{"a":{"kind":"list","sync":"as","fields":{"s":{"type":"string"}},"rules":[{"notBefore":["s","s"]}]}}}"#,
                #"collection "a", field "s": notBefore compares dates or date-times only"#
            ),
            (#"{"model":"m","colections":{}}"#, #"the model file: unknown key "colections" (known: collections, digest, model)"#),
        ])
    func refused(model: String, message: String) {
        #expect(throws: ModelError(message)) { try DataModel(json: Array(model.utf8)) }
    }
}
