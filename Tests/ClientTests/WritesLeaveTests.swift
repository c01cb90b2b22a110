import Foundation
import HTTPTypes
import Handlers
import SyncAPI
import SyncClient
import TestSupport
import Testing

/// Issue 18: writes leave by themselves, typed saves send only what changed (PATCH), sign-in errors say what
/// happened, live mode survives a lost session, and `syncapi client watch` pushes what other processes queue.
@Suite("SDK writes that leave by themselves", .sharingTheMachine)
struct WritesLeaveTests {
    /// Polls `condition` every 20 ms for up to `limit`; returns how long it took (nil: never).
    static func within(_ limit: Duration, _ condition: () async throws -> Bool) async throws -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if try await condition() { return ContinuousClock.now - start }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    @Test("a save, a delete and a typed save reach the server by themselves, about a second later", arguments: Backend.allCases)
    func savesLeave(backend: Backend) async throws {
        try await LiveServer.run(backend) { server in
            let client = try server.client(autoPush: true)
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(client.currentSession?.token)
            try await client.save(.contacts, id: "c1", json: ["firstName": "Ann"])
            let pushed = try await Self.within(.seconds(30)) { try await server.call(.get, "/api/v1/contacts/c1", token: token).status == 200 }
            print("sdk: a save reached the server \(pushed.map { "\($0)" } ?? "never") after it")
            // The push waits `pushDelay` (1 s) so that a burst goes together: about 1 s alone; 30 s bounds it on a
            // loaded machine (seen: 9.8 s once under the whole suite in a clean-clone CI run). Without the automatic
            // push it would never arrive (nothing here syncs).
            let pending = (try? client.pendingOperations().count) ?? -1
            #expect(pushed != nil, "status: \(client.status), pending: \(pending)")
            #expect(try await Self.within(.seconds(5)) { try client.pendingOperations().isEmpty && client.status.pendingWrites == 0 } != nil)
            try await client.delete(.contacts, id: "c1")
            #expect(try await Self.within(.seconds(30)) { try await server.call(.get, "/api/v1/contacts/c1", token: token).status == 404 } != nil)
            try await client.save(Contact(id: "c2", firstName: "Bob"))
            #expect(try await Self.within(.seconds(30)) { try await server.call(.get, "/api/v1/contacts/c2", token: token).status == 200 } != nil)
        }
    }

    @Test("a delete made while the item's creation is being pushed is sent: the item never stays on the server")
    func deleteDuringPush() async throws {
        try await LiveServer.run(.sqlite) { server in
            let client = try server.client()
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(client.currentSession?.token)
            for round in 0..<10 {
                let id = "race\(round)"
                try await client.save(.contacts, id: id, json: ["firstName": "Soon gone"])
                async let pushed = client.push()
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...30)))
                try await client.delete(.contacts, id: id)
                _ = try await pushed
                try await client.sync()
                #expect(try await server.call(.get, "/api/v1/contacts/\(id)", token: token).status == 404, "round \(round)")
                #expect(try client.item(.contacts, id: id) == nil && client.pendingOperations().isEmpty, "round \(round)")
            }
        }
    }

    @Test("a write made while the server cannot take it (its database is down: 503) leaves by itself once it is back")
    func leavesWhenBack() async throws {
        // Its own PostgreSQL, stopped at the end whatever happens.
        let postgres = TestPostgres()
        do {
            try await Self.leavesWhenBack(on: postgres)
        } catch {
            try? await postgres.stop()
            throw error
        }
        try await postgres.stop()
    }

    static func leavesWhenBack(on postgres: TestPostgres) async throws {
        let database = try DatabaseURL(parsing: try await postgres.newDatabaseURL())
        try await LiveServer.run(.postgres, database: database) { server in
            let signer = try server.client()
            try await signer.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(signer.currentSession?.token)
            var configuration = SyncClientConfiguration(serverURL: server.base, replicaPath: LiveServer.replicaPath())
            configuration.retryPolicy = RetryPolicy(attempts: 1, baseDelay: .milliseconds(100))
            configuration.liveMaximumBackoff = .milliseconds(500)
            let client = try SyncClient(configuration: configuration)
            try await client.logIn(username: "alice", password: "password1")
            try await postgres.stop()
            do {
                try await client.save(.contacts, id: "away", json: ["firstName": "Offline"])
                // The automatic push tried and failed (the status says offline): the write is still queued.
                #expect(try await Self.within(.seconds(30)) { client.status.state == .offline } != nil)
                #expect(client.status.pendingWrites == 1, "still queued while the database is down")
            } catch {
                try await postgres.restart()
                throw error
            }
            try await postgres.restart()
            let back = ContinuousClock.now
            let landed = try await Self.within(.seconds(20)) {
                try await server.call(.get, "/api/v1/contacts/away", token: token).status == 200
            }
            print("sdk: a write queued during an outage landed \(landed.map { "\($0)" } ?? "never") after the database came back")
            #expect(landed != nil)
            #expect(try await Self.within(.seconds(5)) { client.status.pendingWrites == 0 } != nil)
            _ = back
        }
    }

    @Test("a typed save of a synced item is a PATCH of the fields it changed: a field changed elsewhere meanwhile stays")
    func typedSaveIsPatch() async throws {
        try await LiveServer.run(.postgres) { server in
            let client = try server.client()
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(client.currentSession?.token)
            _ = try await server.call(.put, "/api/v1/contacts/c1", token: token, body: #"{"firstName":"Ann","notes":"old"}"#)
            try await client.sync()
            // Another device changes `notes` after this replica's last sync.
            _ = try await server.call(.patch, "/api/v1/contacts/c1", token: token, body: #"{"notes":"from the other device"}"#)
            var contact = try #require(try client.all(Contact.self).first)
            contact.firstName = "Anne"
            try await client.save(contact)
            let queued = try #require(try client.pendingOperations().first)
            #expect(queued.kind == .patch && queued.body == ["firstName": "Anne"])
            // A second edit folds into the same patch.
            contact.lastName = "Martin"
            try await client.save(contact)
            #expect(try client.pendingOperations().map(\.body) == [["firstName": "Anne", "lastName": "Martin"]])
            // Saving the same values again changes nothing.
            try await client.save(contact)
            #expect(try client.pendingOperations().count == 1)
            // The patch goes with its base's ETag: the other device's change is a conflict of other fields, merged
            // by the SDK without asking, and journaled.
            let report = try await client.sync()
            #expect(report.pushed == 1 && report.conflicts == 1)
            #expect(try client.conflictJournal().map(\.resolution) == [.merged])
            let server1 = try await server.call(.get, "/api/v1/contacts/c1", token: token).json
            #expect(server1?["firstName"]?.stringValue == "Anne" && server1?["lastName"]?.stringValue == "Martin")
            #expect(server1?["notes"]?.stringValue == "from the other device")
            #expect(try client.all(Contact.self).first?.notes == "from the other device")
            // A new item is still a PUT.
            try await client.save(Contact(id: "c9", firstName: "New"))
            #expect(try client.pendingOperations().first?.kind == .put)
        }
    }

    @Test("a wrong password is invalidCredentials, not a lost session; live mode ended by a 401 resumes at sign-in")
    func errorsAndLive() async throws {
        try await LiveServer.run(.sqlite) { server in
            let client = try server.client()
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let other = try server.client()
            await #expect(throws: SyncClientError.invalidCredentials) { try await other.logIn(username: "alice", password: "wrong-password") }
            try await client.sync()
            client.startLive()
            #expect(try await Self.within(.seconds(10)) { client.status.liveConnected } != nil)
            // Another device changes the password: this client's token stops working; its live loop ends.
            try await other.logIn(username: "alice", password: "password1")
            let otherToken = try #require(other.currentSession?.token)
            let changed = try await server.call(
                .post, "/api/v1/password", token: otherToken, body: #"{"oldPassword":"password1","newPassword":"password2"}"#)
            #expect(changed.status == 204)
            #expect(try await Self.within(.seconds(30)) { !client.status.live } != nil, "live mode ends with the session")
            #expect(!client.isSignedIn)
            // Signing in again brings live mode back, with no new startLive().
            try await client.logIn(username: "alice", password: "password2")
            #expect(client.status.live)
            #expect(try await Self.within(.seconds(10)) { client.status.liveConnected } != nil)
            await client.stopLive()
        }
    }

    @Test("a background sync (BGAppRefreshTask, silent push) says whether it brought new data, within its limit")
    func backgroundSync() async throws {
        try await LiveServer.run(.sqlite) { server in
            let client = try server.client()
            #expect(await client.backgroundSync() == .failed, "signed out")
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(client.currentSession?.token)
            #expect(await client.backgroundSync() == .newData, "the first sync")
            #expect(await client.backgroundSync() == .noData)
            _ = try await server.call(.put, "/api/v1/contacts/bg", token: token, body: #"{"firstName":"Background"}"#)
            #expect(await client.backgroundSync() == .newData)
            #expect(try client.item(.contacts, id: "bg") != nil)
        }
    }

    @Test("syncapi client watch pushes, within two seconds, a write another process queued in the same replica")
    func watchPushesOtherProcesses() async throws {
        try await LiveServer.run(.sqlite) { server in
            let replica = LiveServer.replicaPath()
            let client = try server.client(replica: replica)
            try await client.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(client.currentSession?.token)
            let binary = try BuiltBinary.path()
            let base = [binary, "client", "--server", server.base.absoluteString, "--replica", replica]
            let watcher = try TestPostgres.spawn(base + ["watch"], output: replica + ".watch.log")
            defer {
                kill(watcher, SIGTERM)
                var status: Int32 = 0
                waitpid(watcher, &status, 0)
            }
            // The watcher is up once it has synced (its first line).
            _ = try await Self.within(.seconds(20)) {
                (try? String(contentsOfFile: replica + ".watch.log", encoding: .utf8))?.contains("synced") == true
            }
            let put = try TestPostgres.spawn(
                base + ["put", "contacts", "w1", #"{"firstName":"From another process"}"#], output: replica + ".put.log")
            var status: Int32 = 0
            waitpid(put, &status, 0)
            let queued = ContinuousClock.now
            let landed = try await Self.within(.seconds(60)) { try await server.call(.get, "/api/v1/contacts/w1", token: token).status == 200 }
            let took = landed.map { _ in ContinuousClock.now - queued }
            print("sdk: watch pushed another process's write \(took.map { "\($0)" } ?? "never") after it was queued")
            // 0.9-1.9 s alone (a poll every second); 2.45 s seen under the whole suite. What is wrong is a write that
            // never leaves: the ceiling is far above what a loaded machine takes.
            #expect(took != nil, "the watch never pushed the queued write")
        }
    }
}
