import Foundation
import GRDB
import SyncClientTesting
import Testing

@testable import SyncClient
@testable import SyncClientCommands

/// What needs neither a server nor a replica full of data: JSON numbers, event parsing, digests, retries, the sync
/// requests, the token file, the migrations, the command line's parsing.
@Suite("SDK units")
struct UnitTests {
    @Test("JSON numbers keep their exact value; integers stay integers")
    func numbers() throws {
        let text = #"{"big":9007199254740993,"neg":-42,"pi":3.14159,"lat":48.8566,"one":1.0,"tiny":5e-324}"#
        let value = try JSONValue.parse(text)
        #expect(value["big"]?.numberValue?.int64Value == 9_007_199_254_740_993)
        #expect(value["lat"]?.numberValue?.doubleValue == 48.8566)
        #expect(value["one"] == 1)
        #expect(value.text == #"{"big":9007199254740993,"lat":48.8566,"neg":-42,"one":1,"pi":3.14159,"tiny":5e-324}"#)
        #expect(try JSONValue.parse(value.text) == value)
        #expect(JSONValue.number(1) == .number(1.0))
        #expect(Set([JSONValue.number(1), .number(1.0)]).count == 1)
        let literal: JSONValue = ["a": [true, .null, "s", 2, 2.5] as JSONValue]
        #expect(literal.text == #"{"a":[true,null,"s",2,2.5]}"#)
    }

    @Test("server-sent events split anywhere, with CRLF, comments, id, retry, multi-line data")
    func serverEvents() throws {
        var parser = ServerEventParser()
        let text =
            "\u{FEFF}retry: 2000\r\n\r\n: ping\n\nid: d1\nevent: change\ndata: {\"date\":\"d1\"}\n\nevent: change\r\nid: d2\r\ndata: a\r\ndata: b\r\n\r\n"
            + "data: no-id\rdata\r\r"
        var events: [ServerEvent] = []
        for byte in Array(text.utf8) { events += try parser.feed([byte]) }
        #expect(events.map(\.event) == ["change", "change", "message"])
        #expect(events.map(\.id) == ["d1", "d2", "d2"], "the last event id carries over")
        #expect(events.map(\.data) == [#"{"date":"d1"}"#, "a\nb", "no-id\n"])
        #expect(parser.retry == 2000)
    }

    @Test("an event without data is not dispatched; a UTF-8 sequence split across chunks survives")
    func serverEventsEdges() throws {
        var parser = ServerEventParser()
        #expect(try parser.feed(Array("event: change\n\n".utf8)).isEmpty)
        let bytes = Array("data: é\n\n".utf8)
        var events = try parser.feed(bytes[..<7])
        events += try parser.feed(bytes[7...])
        #expect(events.map(\.data) == ["é"])
    }

    @Test("SHA-256 test vectors, and the verify digest of protocol §11")
    func sha256() throws {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA256.hex(long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.storeServer(db, .contacts, ["id": "b", "modified": "2"])
            try Replica.storeServer(db, .contacts, ["id": "a", "modified": "1"])
            try Replica.save(db, .contacts, id: "local", parent: "", ["firstName": "not on the server"])
        }
        let digests = try replica.pool.read { db in try SyncClient.localDigests(db, lists: ["contacts", "events"]) }
        #expect(digests["contacts"] == VerifyAnswer.List(count: 2, digest: SHA256.hex(Array("a\u{0}1\nb\u{0}2\n".utf8))))
        #expect(digests["events"] == VerifyAnswer.List(count: 0, digest: SHA256.hex([])))
    }

    @Test("an event stream is opened again after its retry hint, never sooner than a second, never later than the cap")
    func reconnectDelay() {
        let delay = { (failures: Int, hint: Duration?, backoff: Duration) in
            SyncClient.reconnectDelay(failures: failures, serverRetry: hint, backoff: backoff, maximum: .seconds(30))
        }
        // A server that ends its stream and says `retry: 0` (or a proxy that closes at once) is not called in a loop.
        #expect(delay(0, .zero, .milliseconds(300)) == .seconds(1))
        #expect(delay(0, nil, .milliseconds(300)) == .seconds(1))
        #expect(delay(0, .seconds(2), .milliseconds(300)) == .seconds(2))
        #expect(delay(3, .seconds(2), .seconds(5)) == .seconds(5))
        #expect(delay(3, .seconds(90), .seconds(5)) == .seconds(30))
        #expect(SyncClient.reconnectDelay(failures: 0, serverRetry: .zero, backoff: .zero, maximum: .zero) == .seconds(1))
    }

    @Test("backoff: exponential, capped, jittered, never before Retry-After")
    func backoff() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maximumDelay: .seconds(1), random: { 1 })
        #expect(policy.delay(after: 0, retryAfter: nil) == .milliseconds(100))
        #expect(policy.delay(after: 3, retryAfter: nil) == .milliseconds(800))
        #expect(policy.delay(after: 10, retryAfter: nil) == .seconds(1))
        #expect(policy.delay(after: 0, retryAfter: 5) == .seconds(5))
        let low = RetryPolicy(baseDelay: .milliseconds(100), random: { 0 })
        #expect(low.delay(after: 1, retryAfter: nil) == .milliseconds(100), "equal jitter: at least half")
    }

    @Test("retries transient errors a bounded number of times, waiting as told; permanent errors at once")
    func retries() async throws {
        let waits = Locked<[Duration]>([])
        let calls = Locked(0)
        let policy = RetryPolicy(attempts: 3, baseDelay: .milliseconds(10), sleep: { d in waits.withLock { $0.append(d) } }, random: { 1 })
        await #expect(throws: SyncClientError.unavailable(status: 429, code: "too_many_requests", retryAfter: 2)) {
            try await policy.run { () async throws -> Int in
                calls.withLock { $0 += 1 }
                throw SyncClientError.unavailable(status: 429, code: "too_many_requests", retryAfter: 2)
            }
        }
        #expect(calls.withLock { $0 } == 3)
        #expect(waits.withLock { $0 } == [.seconds(2), .seconds(2)])
        calls.withLock { $0 = 0 }
        await #expect(throws: SyncClientError.self) {
            try await policy.run { () async throws -> Int in
                calls.withLock { $0 += 1 }
                throw SyncClientError.server(status: 400, code: "invalid_field", detail: "")
            }
        }
        #expect(calls.withLock { $0 } == 1)
        let value = try await policy.run { () async throws -> Int in
            let n = calls.withLock { count in
                count += 1
                return count
            }
            if n < 3 { throw SyncClientError.offline("down") }
            return n
        }
        #expect(value == 3)
        // A Retry-After beyond the policy's longest wait goes to the caller at once (a throttled login says 15 min).
        waits.withLock { $0 = [] }
        await #expect(throws: SyncClientError.self) {
            try await policy.run { () async throws -> Int in
                throw SyncClientError.unavailable(status: 429, code: "too_many_requests", retryAfter: 900)
            }
        }
        #expect(waits.withLock { $0 }.isEmpty)
    }

    @Test("errors: 401 is a lost session, 429 and 5xx are transient with Retry-After, 4xx are permanent")
    func errors() {
        #expect(SyncClientError.from(status: 401, body: nil, retryAfter: nil) == .notSignedIn)
        #expect(
            SyncClientError.from(status: 503, body: ["code": "unavailable"], retryAfter: " 3")
                == .unavailable(status: 503, code: "unavailable", retryAfter: 3))
        #expect(SyncClientError.from(status: 400, body: ["code": "invalid_field", "detail": "d"], retryAfter: nil)?.isTransient == false)
        #expect(SyncClientError.from(status: 204, body: nil, retryAfter: nil) == nil)
        // A wrong password is not a lost session; a throttled login says so, with its wait.
        #expect(SyncClientError.from(status: 401, body: ["code": "invalid_credentials"], retryAfter: nil) == .invalidCredentials)
        let throttled = SyncClientError.from(status: 429, body: ["code": "too_many_requests"], retryAfter: "30")
        #expect(throttled == .throttled(code: "too_many_requests", retryAfter: 30) && throttled?.isTransient == true)
    }

    @Test("the server URL: https, or http to this machine only, unless allowsInsecureHTTP")
    func scheme() throws {
        func open(_ url: String, insecure: Bool = false) -> Bool {
            var configuration = SyncClientConfiguration(
                serverURL: URL(string: url)!, replicaPath: Scratch.path("scheme-"))
            configuration.allowsInsecureHTTP = insecure
            return (try? SyncClient(configuration: configuration)) != nil
        }
        #expect(open("https://api.example.com") && open("http://127.0.0.1:8080") && open("http://localhost:8080"))
        #expect(!open("http://api.example.com") && !open("ftp://api.example.com"))
        #expect(open("http://10.0.0.2:8080", insecure: true))
    }

    @Test("a typed save sends the fields that differ; the same instant written two ways is no change")
    func changedFields() {
        let current: JSONObject = ["id": "e1", "title": "Party", "start": "2026-12-24T18:00:00Z", "modified": "2026-01-01T00:00:00.000Z"]
        let same: JSONObject = ["id": "e1", "title": "Party", "start": "2026-12-24T18:00:00.000Z", "modified": "2026-02-01T00:00:00.000Z"]
        #expect(SyncClient.changedFields(same, from: current, serverSet: ServerModel.Collection.events.serverSetFields).isEmpty)
        let edited: JSONObject = ["id": "e1", "title": "Party!", "start": "2026-12-24T18:00:00.000Z", "location": .null]
        #expect(SyncClient.changedFields(edited, from: current, serverSet: ServerModel.Collection.events.serverSetFields) == ["title": "Party!"])
    }

    @Test("stamps: a write moves its collection's stamp; a bulk apply moves each touched collection once, others not")
    func stamps() throws {
        let replica = try Replica(path: Scratch.path("stamps-"))
        func stamp(_ c: SyncCollection) throws -> Int { try replica.pool.read { try Replica.stamp($0, c) } }
        func insert(_ db: Database, _ c: SyncCollection, _ id: String) throws {
            try db.execute(sql: "INSERT INTO items (collection, id, server) VALUES (?, ?, '{}')", arguments: [c.rawValue, id])
        }
        try replica.pool.write { db in for n in 0..<3 { try insert(db, .contacts, "c\(n)") } }
        #expect(try stamp(.contacts) == 3 && stamp(.events) == 0)
        try replica.pool.write { db in
            try Replica.beginBulkStamps(db)
            for n in 3..<100 { try insert(db, .contacts, "c\(n)") }
            try db.execute(sql: "DELETE FROM items WHERE collection = 'contacts' AND id = 'c0'")
            try Replica.endBulkStamps(db)
        }
        #expect(try stamp(.contacts) == 4 && stamp(.events) == 0)
        // After the bulk apply, writes move stamps row by row again.
        try replica.pool.write { db in try insert(db, .events, "e1") }
        try replica.pool.write { db in try insert(db, .contacts, "c100") }
        #expect(try stamp(.contacts) == 5 && stamp(.events) == 1)
    }

    @Test("previews and tests can build a status and a conflict")
    func publicInitializers() {
        let status = SyncStatus(state: .offline, signedIn: true, pendingWrites: 3, lists: ["contacts": .init(count: 2, complete: true)])
        #expect(status.pendingWrites == 3 && status.lists["contacts"]?.complete == true)
        let conflict = ConflictVersions(collection: .contacts, id: "c1", base: nil, local: ["firstName": "A"], server: nil)
        #expect(conflict.local?["firstName"] == "A")
        let typed = ModelConflict(id: "c1", base: nil, local: Contact(id: "c1", firstName: "A"), server: nil)
        #expect(typed.local?.firstName == "A")
    }

    @Test("the sync group: one date for all, none for an empty paginated list or a fresh list, lastId from the replica")
    func syncRequests() throws {
        let replica = try Golden.replica()
        var requests = try replica.pool.read { db in
            try SyncClient.syncRequests(db, ServerModel.family.endpoints, pageSize: 50, maxChildren: 10, fresh: [])
        }
        #expect(
            requests.map(\.url) == [
                "/api/v1/ctcsync", "/api/v1/evtsync", "/api/v1/familysync", "/api/v1/msgsyncthread?nb=50&maxmessages=10",
                "/api/v1/plcsync", "/api/v1/wallsync?nb=50&maxcomments=10",
            ])
        try replica.pool.write { db in
            try Replica.setMeta(db, MetaKey.date, "D.1")
            // The date covers every collection but places (one the server added since, say): places go without it.
            try Replica.setMeta(db, MetaKey.synced, "accounts,comments,contacts,events,family,members,messages,settings,threads,wall")
            try Replica.apply(db, .threads, try Golden.answer("threads-seed-examples-2-3.json", 2, as: PagedSyncAnswer.self))
            try Replica.save(db, .wall, id: "mine", parent: "", ["type": "text", "text": "offline"])
        }
        requests = try replica.pool.read { db in
            try SyncClient.syncRequests(db, ServerModel.family.endpoints, pageSize: 10, maxChildren: 0, fresh: [.events])
        }
        #expect(
            requests.map(\.url) == [
                "/api/v1/ctcsync?date=D.1", "/api/v1/evtsync", "/api/v1/familysync?date=D.1",
                "/api/v1/msgsyncthread?nb=10&maxmessages=0&date=D.1&lastId=alice", "/api/v1/plcsync", "/api/v1/wallsync?nb=10&maxcomments=0",
            ])
        #expect(Set(requests.map(\.id)).count == requests.count)
    }

    @Test("the token file is private (0600) and replaced atomically")
    func tokenFile() throws {
        let path = Scratch.path("syncclient-token-", suffix: "")
        let store = FileTokenStore(path: path)
        #expect(try store.load() == nil)
        try store.save(ClientSession(token: "t", accountID: "a", familyID: "f", expiresAt: "2030-01-01T00:00:00.000Z"))
        try store.save(ClientSession(token: "t2", accountID: "a", familyID: "f"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try store.load()?.token == "t2")
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        try store.clear()
        #expect(try store.load() == nil)
    }

    @Test("migrations: a new replica gets every table, reopening is a no-op, an unknown future migration is refused")
    func migrations() throws {
        let path = Scratch.path("syncclient-migrate-")
        let replica = try Replica(path: path)
        let tables = try replica.pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'")
        }
        #expect(Set(tables) == ["items", "meta", "queue", "failed", "uploads", "stamps", "stampsBulk", "conflicts", "heldCounts"])
        let applied = try replica.pool.read { db in try Replica.migrator.appliedIdentifiers(db) }
        #expect(applied == Set(Replica.migrator.migrations))
        #expect(try replica.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
        _ = try Replica(path: path)
        try replica.pool.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('999-from-the-future')") }
        #expect(try replica.pool.read { db in try Replica.migrator.hasBeenSuperseded(db) })
    }

    @Test("typed models: save encodes without the parent key, all() decodes with it")
    func models() throws {
        let message = Message(id: "m", parentID: "t", text: "hi")
        var object = try #require(try JSONValue(encoding: message).objectValue)
        #expect(object["_parent"] == "t")
        object[parentKey] = nil
        let decoded = try SyncClient.decode(Message.self, object, parent: "t")
        #expect(decoded == message)
        let contact = try JSONValue.object(["id": "c", "firstName": "A"]).decode(Contact.self)
        #expect(contact.emails.isEmpty && contact.phones.isEmpty)
    }

    @Test("command line: options, flags, values with =, positional JSON")
    func arguments() throws {
        let parsed = try Arguments([
            "put", "contacts", "c1", #"{"firstName":"Bob"}"#, "--server", "http://127.0.0.1:8080", "--replica=/tmp/r.sqlite", "--json",
        ])
        #expect(parsed.positional == ["put", "contacts", "c1", #"{"firstName":"Bob"}"#])
        #expect(parsed.options == ["server": "http://127.0.0.1:8080", "replica": "/tmp/r.sqlite"])
        #expect(parsed.json)
        #expect(throws: SyncClientError.self) { try Arguments(["ls", "--server"]) }
        #expect(throws: SyncClientError.self) { try Arguments(["ls"]).collection(1) }
    }

    @Test("command line: a password comes from SYNCAPI_PASSWORD or standard input, never from an argument")
    func passwordSource() throws {
        let plain = try Arguments(["login", "--username", "alice"])
        #expect(try plain.password(environment: ["SYNCAPI_PASSWORD": "from-env"], readLine: { "from-stdin" }) == "from-env")
        #expect(try plain.password(environment: [:], readLine: { "from-stdin" }) == "from-stdin")
        #expect(throws: SyncClientError.self) { try plain.password(environment: [:], readLine: { nil }) }
        let argv = try Arguments(["login", "--username", "alice", "--password", "secret"])
        #expect(throws: SyncClientError.self) { try argv.password(environment: ["SYNCAPI_PASSWORD": "x"], readLine: { "y" }) }
    }

    @Test("command line: an ID token comes from a file or standard input, trimmed; an empty or missing one is a usage error")
    func idTokenSource() throws {
        let path = Scratch.path("id-token-")
        try "  header.payload.signature\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try Arguments(["login", "--id-token-file", path]).idToken() == "header.payload.signature")
        #expect(try Arguments(["login", "--id-token-file", "-"]).idToken(readLine: { "from.stdin.x" }) == "from.stdin.x")
        #expect(throws: SyncClientError.self) { try Arguments(["login", "--id-token-file", "-"]).idToken(readLine: { nil }) }
        #expect(throws: SyncClientError.self) { try Arguments(["login", "--id-token-file", path + ".none"]).idToken() }
        try "\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: SyncClientError.self) { try Arguments(["login", "--id-token-file", path]).idToken() }
    }

    @Test("a file protection class opens the replica as usual (applied on iOS; nothing to set on Linux)")
    func fileProtection() async throws {
        var configuration = SyncClientConfiguration(serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("protected-"))
        configuration.fileProtection = .completeUntilFirstUserAuthentication
        configuration.transport = FakeSyncServer()
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        try await client.save(Contact(id: "c1", firstName: "Ann"))
        #expect(try client.items(.contacts).count == 1)
    }

    @Test("the replica and its companions are readable by their owner only")
    func replicaPermissions() throws {
        let path = Scratch.path("syncclient-perm-")
        let replica = try Replica(path: path)
        try replica.pool.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS probe (x)") }
        for file in [path, path + "-wal"] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(file): \(String(mode, radix: 8))")
        }
    }

    @Test("command line: usage errors exit 2 with one line on stderr; help exits 0")
    func exitCodes() async throws {
        #expect(await ClientCommandLine.run(["help"]) == 0)
        #expect(await ClientCommandLine.run([]) == 2)
        #expect(await ClientCommandLine.run(["ls", "contacts"]) == 2, "no --server")
        let replica = Scratch.path("syncclient-cli-")
        #expect(await ClientCommandLine.run(["frobnicate", "--server", "http://127.0.0.1:9", "--replica", replica]) == 2)
        // put and delete work offline: queued in the replica.
        let common = ["--server", "http://127.0.0.1:9", "--replica", replica]
        #expect(await ClientCommandLine.run(["put", "contacts", "c1", #"{"firstName":"Ann"}"#] + common) == 0)
        #expect(await ClientCommandLine.run(["put", "contacts", "c2", "not json"] + common) == 2)
        #expect(await ClientCommandLine.run(["delete", "contacts", "c9"] + common) == 0)
        #expect(await ClientCommandLine.run(["ls", "contacts", "--json"] + common) == 0)
        #expect(await ClientCommandLine.run(["get", "contacts", "nope"] + common) == 1)
        #expect(await ClientCommandLine.run(["sync"] + common) == 1, "not signed in")
        let client = try? SyncClient(configuration: SyncClientConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, replicaPath: replica))
        #expect(try client?.pendingOperations().map(\.id) == ["c1", "c9"])
    }
}
