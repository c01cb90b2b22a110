import Foundation
import Handlers
import SyncAPI
import SyncClient
import SyncClientCommands
import TestSupport
import Testing

/// Issue 39 in the SDK: `signIn(idToken:space:)` against a real server trusting a provider of the test's own (its key
/// set in a file), on both backends.
@Suite("Swift SDK: sign-in with an identity provider", .sharingTheMachine)
struct IdentitySignInTests {
    static func run(_ backend: Backend, _ idp: TestIdentityProvider, _ body: @escaping @Sendable (LiveServer) async throws -> Void) async throws {
        let path = TestScratch.path("jwks-", suffix: ".json")
        try idp.jwks().write(toFile: path, atomically: true, encoding: .utf8)
        let identity = try IdentityProviders([idp.provider(name: "apple", keySet: .file(path))])
        try await LiveServer.run(backend, configure: { $0.identity = identity }, body)
    }

    @Test(
        "a first sign-in makes the account and its home space, the next keeps the replica; an account in no space gets its first as home",
        arguments: Backend.allCases)
    func signIn(backend: Backend) async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(backend, idp) { server in
            let ann = try server.client()
            let first = try await ann.signIn(idToken: try idp.token(idp.claims(subject: "ann")), space: "Smith")
            #expect(first.created && first.spaces.map(\.name) == ["Smith"] && first.spaces.first?.role == "owner")
            #expect(ann.currentSession?.familyID == first.spaces.first?.id)
            try await ann.save(.contacts, id: "c1", json: ["firstName": .string("Ann")])
            try await ann.sync()
            // Signed in again (a new token from the provider): the same account, its replica kept.
            let again = try await ann.signIn(idToken: try idp.token(idp.claims(subject: "ann")), space: "Ignored")
            #expect(!again.created && again.accountID == first.accountID)
            #expect(try ann.items(.contacts).count == 1)

            // Without a space: none, and no home until it makes one.
            let ben = try server.client()
            let made = try await ben.signIn(idToken: try idp.token(idp.claims(subject: "ben")))
            #expect(made.created && made.spaces.isEmpty && ben.currentSession?.familyID == "")
            let space = try await ben.createSpace(name: "Jones")
            #expect(ben.currentSession?.familyID == space.id)
            try await ben.save(.contacts, id: "b1", json: ["firstName": .string("Ben")])
            try await ben.sync()
            let listed = try await server.serverList("ctcsync", token: try #require(ben.currentSession?.token))
            #expect(Array(listed.keys) == ["b1"])

            // In two spaces, its home is the one the server marks, not the first listed by chance.
            let code = try await ann.invite(role: "reader").code
            _ = try await ben.acceptInvitation(code: code)
            let third = try server.client()
            let both = try await third.signIn(idToken: try idp.token(idp.claims(subject: "ben")))
            #expect(both.spaces.count == 2 && third.currentSession?.familyID == space.id)

            // Ben deletes his account (alone in his own space, a reader of Ann's): signed out, the replica empty, and
            // his identity's next sign-in makes a new account.
            try await third.sync()
            #expect(try third.items(.contacts).count == 1)
            try await third.deleteAccount()
            #expect(try third.currentSession == nil && third.items(.contacts).isEmpty)
            let reborn = try await third.signIn(idToken: try idp.token(idp.claims(subject: "ben")))
            #expect(reborn.created && reborn.accountID != made.accountID && reborn.spaces.isEmpty)
            // Ann owns a space with a member left in it: refused, nothing erased.
            let code2 = try await ann.invite(role: "member").code
            _ = try await third.acceptInvitation(code: code2)
            await #expect(throws: SyncClientError.self) { try await ann.deleteAccount() }
            #expect(try ann.currentSession != nil && ann.items(.contacts).count == 1)
        }
    }

    @Test("syncapi client login --id-token-file: signs in (making the named space), then syncs; a refused token exits 1")
    func commandLine() async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(.sqlite, idp) { server in
            let common = ["--server", server.base.absoluteString, "--replica", LiveServer.replicaPath()]
            let file = TestScratch.path("id-token-", suffix: ".jwt")
            try (try idp.token(idp.claims(subject: "cli")) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            #expect(await ClientCommandLine.run(["login", "--id-token-file", file, "--new-space", "Smith"] + common) == 0)
            #expect(await ClientCommandLine.run(["put", "contacts", "c1", #"{"firstName":"Cli"}"#] + common) == 0)
            #expect(await ClientCommandLine.run(["sync"] + common) == 0)
            let client = try SyncClient(configuration: SyncClientConfiguration(serverURL: server.base, replicaPath: common[3]))
            let listed = try await server.serverList("ctcsync", token: try #require(client.currentSession?.token))
            #expect(Array(listed.keys) == ["c1"])
            try (try idp.token(idp.claims(subject: "cli", now: Date().timeIntervalSince1970 - 3600))).write(
                toFile: file, atomically: true, encoding: .utf8)
            #expect(await ClientCommandLine.run(["login", "--id-token-file", file] + common) == 1)
            #expect(await ClientCommandLine.run(["login", "--id-token-file", file + ".missing"] + common) == 2)
        }
    }

    @Test("each refusal is .idTokenRefused with its check, and signs nothing in")
    func refusals() async throws {
        let idp = try TestIdentityProvider()
        try await Self.run(.sqlite, idp) { server in
            let client = try server.client()
            let now = Date().timeIntervalSince1970
            var wrongAudience = idp.claims()
            wrongAudience["aud"] = "com.other.app"
            let stranger = try TestIdentityProvider(issuer: "https://elsewhere.example")
            let cases: [(String, IdentityTokenRefusal)] = [
                (try idp.token(idp.claims(now: now - 3600)), .expired),
                (try idp.token(wrongAudience), .audience),
                (try stranger.token(stranger.claims()), .issuer),
                (try idp.token(idp.claims(), kid: .some("rotated-away")), .unknownKey),
                ("not.a.token", .malformed),
            ]
            for (token, check) in cases {
                await #expect(throws: SyncClientError.idTokenRefused(check, detail: "")) {
                    do {
                        try await client.signIn(idToken: token)
                    } catch SyncClientError.idTokenRefused(let found, _) {
                        throw SyncClientError.idTokenRefused(found, detail: "")
                    }
                }
            }
            #expect(client.currentSession == nil)
        }
    }
}
