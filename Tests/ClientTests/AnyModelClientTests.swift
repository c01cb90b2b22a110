import Foundation
import SyncAPI
import SyncClient
import Synchronization
import TestSupport
import Testing

/// The SDK with a model other than the family app's (issue 17): it reads the model from `GET /api/v1/model` and syncs
/// its collections by name (a list, a paginated list with its children, an account singleton) against the real
/// server, on both backends, with nothing of the model compiled into it.
@Suite("SDK with any model", .sharingTheMachine)
struct AnyModelClientTests {
    static func recipes() throws -> DataModel {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try DataModel(contentsOf: root.appendingPathComponent("models/examples/recipes.json").path)
    }

    @Test(
        "recipes: the SDK learns the model, syncs every kind by name, pages, verifies, and refuses what the model lacks", arguments: Backend.allCases)
    func recipes(backend: Backend) async throws {
        let model = try Self.recipes()
        try await LiveServer.run(backend, model: model) { server in
            let phone = try server.client()
            try await phone.signUp(family: "Cooks", username: "ann", password: "password1")
            // Read at sign-in: the model's collections, kinds and endpoints, and no account profiles (no family singleton).
            let known = try #require(phone.knownModel)
            #expect(known.name == "recipes" && known.digest == model.digest)
            #expect(known.collections.keys.map(\.rawValue).sorted() == ["boards", "pins", "preferences", "recipes"])
            #expect(known.endpoints.map(\.name) == ["brdsync", "prefsync", "rcpsync"])
            #expect(known["pins"]?.parent == "boards" && known["boards"]?.sortField == "lastPinAt")

            try await phone.save("recipes", id: "r1", json: ["title": "Soup", "ingredients": ["water", "salt"]])
            try await phone.save("boards", id: "b1", json: ["name": "Kitchen"])
            try await phone.save("pins", id: "p1", parent: "b1", json: ["note": "by the window"])
            try await phone.save("preferences", id: "ignored", json: ["units": "imperial"])
            try await phone.sync()
            #expect(try phone.pendingOperations().isEmpty && phone.failedOperations().isEmpty)
            let account = try #require(phone.currentSession?.accountID)
            #expect(try phone.item("preferences", id: account)?["units"] == "imperial")
            #expect(try phone.items("boards").first?["lastPinAt"] != nil, "the server-set order field came back")

            // A second device of the account: everything arrives by name, the children inside their parent.
            let tablet = try server.client()
            try await tablet.logIn(username: "ann", password: "password1")
            try await tablet.sync()
            #expect(try tablet.items("recipes").map { $0["title"] } == ["Soup"])
            #expect(try tablet.items("recipes").first?["servings"] == 2, "the model's default")
            #expect(try tablet.items("pins", parent: "b1").map { $0["note"] } == ["by the window"])
            #expect(try tablet.item("preferences", id: account)?["units"] == "imperial")

            // Deltas both ways; more boards than a page: the list pages with loadMore.
            try await tablet.delete("recipes", id: "r1")
            for i in 2...7 { try await tablet.save("boards", id: "b\(i)", json: ["name": .string("Board \(i)")]) }
            try await tablet.sync()
            try await phone.sync()
            #expect(try phone.items("recipes").isEmpty)
            #expect(try phone.items("boards").count == 5 && !phone.hasAll("boards"))
            #expect(try await phone.loadMore("boards"))
            #expect(try Set(phone.items("boards").compactMap { $0["id"]?.stringValue }) == Set((1...7).map { "b\($0)" }))
            let verified = try await phone.verify()
            #expect(verified.isExact && verified.checked.contains("recipes") && verified.checked.contains("boards"))

            // What the model does not have, or has differently, is refused before any request.
            await #expect(throws: SyncClientError.self) { try await phone.save("contacts", id: "c1", json: ["firstName": "Bob"]) }
            await #expect(throws: SyncClientError.self) { try await phone.save("pins", id: "p2", json: ["note": "no board"]) }
            await #expect(throws: SyncClientError.self) { try await phone.delete("preferences", id: account) }
            #expect(try phone.pendingOperations().isEmpty)
        }
    }

    @Test(
        "a collection the server adds live is downloaded whole: the stored date, newer than its items, is not sent for it",
        arguments: Backend.allCases)
    func addedCollection(backend: Backend) async throws {
        let todos = #""todos":{"kind":"list","sync":"tdsync","fields":{"text":{"type":"string"}}}"#
        let notes = #""notes":{"kind":"list","sync":"ntsync","fields":{"text":{"type":"string"}}}"#
        let before = try DataModel(json: Array(#"{"model":"notes","collections":{\#(todos)}}"#.utf8))
        let after = try DataModel(json: Array(#"{"model":"notes","collections":{\#(todos),\#(notes)}}"#.utf8))
        let database = try await backend.freshDatabaseURL()
        // One phone across a deploy of the server (a new port here): its calls go to whichever server runs.
        let redirect = Redirect()
        var configuration = SyncClientConfiguration(serverURL: URL(string: "http://127.0.0.1:1")!, replicaPath: LiveServer.replicaPath())
        configuration.transport = redirect
        configuration.pushDelay = nil
        configuration.modelCheckInterval = .seconds(3600)
        let phone = try SyncClient(configuration: configuration)
        try await LiveServer.run(backend, database: database, model: before) { server in
            redirect.base.withLock { $0 = server.base }
            try await phone.signUp(family: "Notes", username: "ann", password: "password1")
            try await phone.save("todos", id: "t1", json: ["text": "milk"])
            try await phone.sync()
        }
        try await LiveServer.run(backend, database: database, model: after) { server in
            redirect.base.withLock { $0 = server.base }
            // Another device writes in the new collection; the phone, which read the model within the hour, syncs
            // with the old one: its date moves past that note, which it did not ask for.
            let tablet = try server.client()
            try await tablet.logIn(username: "ann", password: "password1")
            try await tablet.save("notes", id: "n1", json: ["text": "from the tablet"])
            try await tablet.sync()
            try await phone.sync()
            #expect(phone.knownModel?["notes"] == nil)
            // The next check of the model (here asked for; an hour later or at the next launch by itself) finds the
            // new list: it is asked without the date, and comes whole.
            try await phone.serverModel(refresh: true)
            try await phone.sync()
            #expect(try phone.items("notes").map { $0["text"] } == ["from the tablet"])
            #expect(try phone.items("todos").map { $0["text"] } == ["milk"])
        }
    }
}

/// A transport that sends every call to the server that runs now (its port changes when it restarts).
final class Redirect: HTTPTransport {
    let base = Mutex<URL?>(nil)
    let inner = URLSessionTransport()

    func moved(_ call: HTTPCall) -> HTTPCall {
        var call = call
        var components = URLComponents(url: call.url, resolvingAgainstBaseURL: false)!
        components.port = base.withLock { $0?.port }
        call.url = components.url!
        return call
    }

    func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await inner.send(moved(call)) }
    func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
        try await inner.stream(moved(call))
    }
    func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer { try await inner.download(moved(call)) }
}
