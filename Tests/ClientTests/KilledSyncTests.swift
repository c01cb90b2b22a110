import Foundation
import HTTPTypes
import SyncClient
import TestSupport
import Testing

/// A sync never leaves the replica half-applied (issue 11): `syncapi client sync` killed at random moments leaves
/// either the old replica or the new one, each exact for its date.
@Suite("Client killed mid-sync", .sharingTheMachine)
struct KilledSyncTests {
    static func binary() throws -> String { try BuiltBinary.path() }

    @Test("SIGKILL during 12 syncs of 1,000 contacts: the replica is always empty without a date, or exact with it")
    func killed() async throws {
        try await LiveServer.run(.sqlite) { server in
            let seeder = try server.client()
            try await seeder.signUp(family: "Smith", username: "alice", password: "password1")
            let token = try #require(seeder.currentSession?.token)
            for start in stride(from: 0, to: 1000, by: 20) {
                let requests = (start..<start + 20).map { n in
                    #"{"id":"\#(n)","method":"PUT","url":"/api/v1/contacts/c\#(n)","body":{"firstName":"Contact \#(n)","notes":"\#(String(repeating: "n", count: 300))"}}"#
                }
                _ = try await server.call(.post, "/api/v1/group", token: token, body: #"{"requests":[\#(requests.joined(separator: ","))]}"#)
            }
            let expected = try await server.serverList("ctcsync", token: token)
            let binary = try Self.binary()
            var outcomes: [String: Int] = [:]
            for round in 0..<12 {
                let replica = LiveServer.replicaPath()
                let login = try server.client(replica: replica)
                try await login.logIn(username: "alice", password: "password1")
                let pid = try TestPostgres.spawn(
                    [binary, "client", "sync", "--server", server.base.absoluteString, "--replica", replica], output: replica + ".log")
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...600)))
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                let after = try server.client(replica: replica)
                let items = try replicaList(after, .contacts)
                if after.dateOfSync == nil {
                    #expect(items.isEmpty, "round \(round): items without a date")
                    outcomes["before", default: 0] += 1
                } else {
                    #expect(items == expected, "round \(round): a date with \(items.count) items")
                    outcomes["after", default: 0] += 1
                }
                // The killed replica syncs on normally.
                try await after.sync()
                #expect(try replicaList(after, .contacts) == expected)
            }
            print("sdk: 12 syncs killed at random: \(outcomes)")
        }
    }
}
