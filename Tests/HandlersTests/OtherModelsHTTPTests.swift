import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// The server driven by a model other than the family app's (protocol §12), on both backends: §12's recipes example
/// and an inspections model that uses every kind, field type and rule.
@Suite("Other data models over HTTP", .sharingTheMachine)
struct OtherModelsHTTPTests {
    static func model(_ name: String) throws -> DataModel {
        try DataModel(contentsOf: DataModelPaths.root.appendingPathComponent("models/examples/\(name).json").path)
    }

    static func list(_ answer: APIClient.Answer, _ key: String = "updated") -> [JSONValue] {
        if case .array(let items)? = answer.json?[key] { return items }
        return []
    }

    @Test("recipes: lists, paginated with children, an account singleton; the family app's paths are gone", arguments: Backend.allCases)
    func recipes(backend: Backend) async throws {
        let recipes = try Self.model("recipes")
        try await TestApp.run(backend, configure: { $0.model = recipes }) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await APIClient(client: client).call(.get, "/api/v1/model").json?["digest"] == .string(recipes.digest))
            // Defaults, limits and rules from the file.
            let soup = try await api.call(.put, "/api/v1/recipes/r1", body: #"{"title":"Soup","ingredients":["water","salt"]}"#)
            #expect(soup.status == .ok && soup.json?["servings"] == .number(2) && soup.json?["vegetarian"] == .bool(false))
            let half = try await api.call(.put, "/api/v1/recipes/r2", body: #"{"title":"Half","servings":2.5}"#)
            #expect(half.status == .badRequest && half.json?["field"] == .string("servings"))
            let neither = try await api.call(.put, "/api/v1/recipes/r2", body: #"{"course":"main"}"#)
            #expect(neither.status == .badRequest && neither.json?["field"] == .string("title"))
            #expect(try await api.call(.put, "/api/v1/recipes/r2", body: #"{"title":"x","course":"brunch"}"#).status == .badRequest)
            #expect(try await api.call(.put, "/api/v1/recipes/r2", body: #"{"title":"x","chef":"me"}"#).json?["code"] == .string("unknown_field"))
            // The list's endpoint: a full list, then only the changes.
            let first = try await api.call(.get, "/api/v1/rcpsync")
            #expect(first.json?["sync"] == .bool(false) && Self.list(first).count == 1)
            let date = try #require(first.json?["date"]?.stringValue)
            #expect(try await api.call(.patch, "/api/v1/recipes/r1", body: #"{"vegetarian":true}"#).json?["ingredients"] != nil)
            #expect(try await api.call(.delete, "/api/v1/recipes/r1").status == .noContent)
            let delta = try await api.call(.get, "/api/v1/rcpsync?date=\(date)")
            #expect(delta.json?["sync"] == .bool(true) && Self.list(delta, "deleted") == [.string("r1")])
            // Paginated boards with their pins; the server-set order field and children array sent back are ignored.
            #expect(try await api.call(.put, "/api/v1/boards/b1", body: #"{"name":"Dinner"}"#).status == .ok)
            let pin = try await api.call(.put, "/api/v1/boards/b1/pins/p1", body: #"{"note":"try this","at":"2026-11-23T10:00:00Z"}"#)
            #expect(pin.status == .ok && pin.json?["author"] != nil)
            let boards = try await api.call(.get, "/api/v1/brdsync?maxpins=5")
            let board = try #require(Self.list(boards).first)
            #expect(board["pins"].map { if case .array(let pins) = $0 { pins.count } else { 0 } } == 1 && board["lastPinAt"] != nil)
            let sentBack = try await api.call(.put, "/api/v1/boards/b1", body: JSONWriter.encode(board))
            #expect(sentBack.status == .ok && sentBack.json?["modified"] == board["modified"], "unchanged: \(sentBack.body)")
            #expect(try await api.call(.get, "/api/v1/boards/b1/pins").status == .ok)
            // The account singleton exists from signup, with its defaults; its endpoint answers it alone.
            #expect(try await api.call(.get, "/api/v1/preferences").json?["units"] == .string("metric"))
            let prefs = try await api.call(.get, "/api/v1/prefsync")
            #expect(prefs.json?["preferences"]?["units"] == .string("metric") && prefs.json?["accounts"] == nil)
            let prefsDate = try #require(prefs.json?["date"]?.stringValue)
            #expect(try await api.call(.patch, "/api/v1/preferences", body: #"{"units":"imperial"}"#).status == .ok)
            let changed = try await api.call(.get, "/api/v1/prefsync?date=\(prefsDate)")
            #expect(changed.json?["sync"] == .bool(true) && changed.json?["preferences"]?["units"] == .string("imperial"))
            // Verify covers the model's lists.
            let verify = try await api.call(.get, "/api/v1/verify?boardsLastId=b1")
            #expect(verify.json?["lists"]?["recipes"]?["count"] == .number(0) && verify.json?["lists"]?["boards"]?["count"] == .number(1))
            // A group of this model's calls.
            let group = try await api.call(
                .post, "/api/v1/group",
                body:
                    #"{"requests":[{"id":"w","method":"PUT","url":"/api/v1/recipes/r3","body":{"source":"https://example.org/r"}},{"id":"a","method":"GET","url":"/api/v1/rcpsync"},{"id":"b","method":"GET","url":"/api/v1/prefsync"}]}"#
            )
            #expect(group.status == .ok && group.body.contains(#""id":"r3""#))
            // The family app's paths are not served.
            for path in ["/api/v1/contacts/c1", "/api/v1/ctcsync", "/api/v1/familysync", "/api/v1/settings"] {
                #expect(try await api.call(.get, path).status == .notFound, "\(path)")
            }
        }
    }

    @Test("inspections: a family singleton with a list in its endpoint, filters, every field type and both rules", arguments: Backend.allCases)
    func inspections(backend: Backend) async throws {
        let inspections = try Self.model("inspections")
        try await TestApp.run(backend, configure: { $0.model = inspections }) { client in
            let api = try await APIClient.signedUp(client)
            // The family singleton is named as the family at signup; its endpoint carries the list, the accounts and
            // the caller's own singleton.
            let site = try await api.call(.get, "/api/v1/sitesync")
            #expect(site.json?["site"]?["name"] != nil && site.json?["inspectors"]?["updated"] == .array([]))
            #expect(site.json?["accounts"]?["updated"].map { if case .array(let a) = $0 { a.count } else { 0 } } == 1)
            #expect(site.json?["checklist"]?["done"] == .array([]))
            let date = try #require(site.json?["date"]?.stringValue)
            // A change of the list changes the family singleton (§2's members rule).
            #expect(try await api.call(.put, "/api/v1/inspectors/i1", body: #"{"name":"Ann","badge":12}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/inspectors/i2", body: #"{"name":"Bo","badge":0}"#).status == .badRequest)
            let after = try await api.call(.get, "/api/v1/sitesync?date=\(date)")
            #expect(
                after.json?["site"] != .null && after.json?["inspectors"]?["updated"].map { if case .array(let a) = $0 { a.count } else { 0 } } == 1)
            #expect(try await api.call(.patch, "/api/v1/site", body: #"{"latitude":91}"#).json?["field"] == .string("latitude"))
            #expect(try await api.call(.patch, "/api/v1/site", body: #"{"latitude":45.5}"#).status == .ok)
            // Visits: enum filter, reference and enum arrays, date-times with notBefore, requireOneOf, a default.
            let planned = try await api.call(
                .put, "/api/v1/visits/v1",
                body: #"{"status":"planned","start":"2026-12-01T09:00:00Z","inspectorIds":["i1"],"hazards":["fire"]}"#)
            #expect(planned.status == .ok && planned.json?["urgent"] == .bool(false) && planned.json?["author"] != nil)
            let backwards = try await api.call(
                .put, "/api/v1/visits/v2", body: #"{"status":"done","start":"2026-12-02T09:00:00Z","end":"2026-12-01T09:00:00Z"}"#)
            #expect(backwards.json?["field"] == .string("end"))
            #expect(try await api.call(.put, "/api/v1/visits/v2", body: #"{"status":"done"}"#).json?["field"] == .string("start"))
            #expect(
                try await api.call(.put, "/api/v1/visits/v2", body: #"{"status":"done","report":"https://example.org/r2","hazards":["snow"]}"#).status
                    == .badRequest)
            #expect(try await api.call(.put, "/api/v1/visits/v2", body: #"{"status":"done","report":"https://example.org/r2"}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/visits/v1/findings/f1", body: #"{"text":"crack","on":"2026-12-01"}"#).status == .ok)
            #expect(try await api.call(.put, "/api/v1/visits/v1/findings/f2", body: #"{"text":"x","on":"2026-13-01"}"#).status == .badRequest)
            let done = try await api.call(.get, "/api/v1/vstsync?statuss=done&maxfindings=2")
            #expect(Self.list(done).compactMap { $0["id"]?.stringValue } == ["v2"])
            let all = try await api.call(.get, "/api/v1/vstsync")
            #expect(Self.list(all).count == 2)
            // The filter field is immutable while the item lives, as the wall's type.
            #expect(try await api.call(.patch, "/api/v1/visits/v1", body: #"{"status":"done"}"#).json?["code"] == .string("type_immutable"))
            let verify = try await api.call(.get, "/api/v1/verify?visitsLastId=v1&statuss=planned")
            #expect(verify.json?["lists"]?["inspectors"]?["count"] == .number(1) && verify.json?["lists"]?["visits"]?["count"] == .number(1))
        }
    }
}
