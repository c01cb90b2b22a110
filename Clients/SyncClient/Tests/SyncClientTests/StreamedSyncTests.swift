import Foundation
import GRDB
import SyncClientTesting
import Synchronization
import Testing

@testable import SyncClient

/// The sync group's answer applied while it downloads (issue 18): items stored straight from their bytes
/// (`CanonicalItem`) give the same rows as the reference path, an answer cut in pieces of any size gives exactly the
/// replica the whole answer gives, and a sync interrupted mid-answer leaves the replica and its date as they were.
@Suite("Streamed sync answers")
struct StreamedSyncTests {
    /// What the reference path (`JSONValue`, `JSONEncoder`) makes of an item's text: its row, "skipped" (no string
    /// id) or "throws".
    static func reference(_ collection: ServerModel.Collection, _ text: String) -> String {
        guard let value = try? JSONValue.parse(text), let object = value.objectValue else { return "throws" }
        return Replica.serverRow(collection, object).map { "\($0)" } ?? "skipped"
    }

    /// What the streamed path (`CanonicalItem`, or the reference when it cannot vouch) makes of the same text.
    static func streamed(_ collection: ServerModel.Collection, _ text: String) -> String {
        var canonical = CanonicalItem()
        do {
            return try Replica.serverRow(collection, ArraySlice(Array(text.utf8)), &canonical).map { "\($0)" } ?? "skipped"
        } catch {
            return "throws"
        }
    }

    static let tricky: [(ServerModel.Collection, String, fast: Bool)] = [
        (.contacts, #"{"id":"c1","firstName":"Bob","lastName":null,"emails":["bob@example.org"],"n":12,"ok":true,"modified":"m"}"#, true),
        (.contacts, #"{"id":"c2","notes":"line\nbreak \"quoted\" back\\slash tab\t \b \f \r \u0001 \u001f","x":-5}"#, true),
        (.contacts, #"{"id":"c3","lastName":"Müller","notes":"é 😀 \#u{2028} / slash \#u{7f}","z":{"b":1,"a":[{"d":null,"c":"x"}]}}"#, true),
        (.contacts, #" { "id" : "c4" , "b" : [ 1 , 2 ] , "a" : { } , "c" : [ ] } "#, true),
        (.contacts, #"{"id":"c5","max":9223372036854775807,"min":-9223372036854775808,"zero":0}"#, true),
        (.contacts, #"{"id":"c6","messages":[{"id":"m"}],"nomore":true,"comments":[],"inner":{"messages":1,"nomore":false}}"#, true),
        (.contacts, #"{"id":"c7","B":1,"a":2,"_":3,"A1":4,"a10":5,"a9":6,"~":7,"-":8}"#, true),
        // The reference path: numbers written otherwise, escapes JSONEncoder does not write, odd keys, odd ids.
        (.places, #"{"id":"p1","latitude":48.8566,"longitude":2.3522}"#, false),
        (.contacts, #"{"id":"c8","a":1.0,"b":-0,"c":1e2,"d":9223372036854775808,"e":0.1}"#, false),
        (.contacts, #"{"id":"c15","f":01}"#, false),
        (.contacts, #"{"id":"c9","a":"\u00e9\/\u0041"}"#, false),
        (.contacts, #"{"id":"c10","a":"\ud83d\ude00"}"#, false),
        (.contacts, #"{"id":"c11","é":1,"a":2}"#, false),
        (.contacts, #"{"id":"c\u0031","a":1}"#, false),
        (.contacts, #"{"id":12,"a":1}"#, false),
        (.contacts, #"{"a":1}"#, false),
        (.contacts, #"{"id":"c12","a":1,"a":2}"#, false),
        (.contacts, #"{"id":"c13","a":[1,2,]}"#, false),
        (.contacts, #"{"id":"c14","a":tru}"#, false),
        (.contacts, #"["id"]"#, false),
        (.threads, #"{"id":"t1","title":"T","lastMessageAt":"2026-01-02T00:00:00.000Z","messages":[{"id":"m1"}],"nomore":true}"#, true),
        (.threads, #"{"id":"t2","title":"T","lastMessageAt":null}"#, true),
        (.threads, #"{"id":"t3","title":"T"}"#, true),
        (.messages, #"{"id":"m1","text":"hi","created":"2026-01-02T00:00:00.000Z"}"#, true),
    ]

    @Test("an item's row made from its bytes is the reference path's row, fast path or not")
    func canonicalRows() throws {
        for (collection, text, fast) in Self.tricky {
            #expect(Self.streamed(collection, text) == Self.reference(collection, text), "\(text)")
            var canonical = CanonicalItem()
            #expect(
                canonical.make(ArraySlice(Array(text.utf8)), sortField: collection.sortField, children: collection.children?.rawValue) == fast,
                "\(text)")
        }
        // Every item of every golden answer, in the server's member order and in others (the encoder's, with spaces).
        var checked = 0
        for file in try Golden.files() {
            for step in try Golden.steps(file) {
                guard let body = step.body else { continue }
                for item in Self.items(in: body) {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted]
                    for text in [JSONValue.object(item).text, String(decoding: try encoder.encode(JSONValue.object(item)), as: UTF8.self)] {
                        for collection in [ServerModel.Collection.contacts, .threads, .wall, .messages] {
                            #expect(Self.streamed(collection, text) == Self.reference(collection, text), "\(file): \(text)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 20)
    }

    /// Every object with a string id inside a value.
    static func items(in value: JSONValue) -> [JSONObject] {
        switch value {
        case .object(let object):
            return (object["id"]?.stringValue != nil ? [object] : []) + object.values.flatMap(items(in:))
        case .array(let array): return array.flatMap(items(in:))
        default: return []
        }
    }

    /// The whole replica: every row and every meta entry but the limits.
    static func dump(_ replica: Replica) throws -> [String] {
        try replica.pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT collection || '|' || parent || '|' || id || '|' || IFNULL(server, '-') || '|' || IFNULL(etag, '-') || '|'
                        || IFNULL(local, '-') || '|' || localDeleted || '|' || sortKey FROM items ORDER BY collection, parent, id
                    """)
                + String.fetchAll(db, sql: "SELECT key || '=' || value FROM meta WHERE key <> 'limits.json' ORDER BY key")
        }
    }

    /// A replica with a previous state: server items, one with a known ETag, unsent local edits, a date.
    static func seeded() throws -> Replica {
        let replica = try Golden.replica()
        try replica.pool.write { db in
            try Replica.storeServer(db, .contacts, ["id": "old1", "firstName": "Old", "modified": "m"])
            try Replica.storeServer(db, .contacts, ["id": "c1", "firstName": "Bob", "modified": "m0"], etag: "\"1\"")
            try Replica.storeServer(db, .contacts, ["id": "kept", "firstName": "Mine", "modified": "m"])
            try db.execute(sql: "UPDATE items SET local = '{\"firstName\":\"Edited\",\"id\":\"kept\"}' WHERE id = 'kept'")
            try Replica.storeServer(db, .events, ["id": "e1", "title": "E1", "modified": "m"])
            try Replica.storeServer(db, .events, ["id": "e2", "title": "E2", "modified": "m"])
            try Replica.storeServer(db, .places, ["id": "gone", "name": "G", "modified": "m"])
            try Replica.setMeta(db, MetaKey.date, "D0")
        }
        return replica
    }

    /// A group answer as the server writes it (members in the server's order), with the corner cases of the rules:
    /// a replacing list with an item held locally, a delta with deletions, a list whose `sync` comes after its items,
    /// and a replacing list whose `deleted` (after its items) names one of them.
    static let groupAnswer: String = {
        let contacts = (0..<300).map { i in
            #"{"id":"c\#(i)","firstName":"First\#(i)","lastName":"Müller","emails":["p\#(i)@example.org"],"notes":"a \"b\"\n","modified":"m\#(i)"}"#
        }
        let extra = [
            #"{"id":"kept","firstName":"Server","modified":"m"}"#, #"{"id":"odd","score":1.5,"x":"\u00e9","modified":"m"}"#,
            // An id twice (which the protocol never sends): the later one is stored, as row by row.
            #"{"id":"c5","firstName":"Twice","modified":"m9"}"#,
        ]
        let c = #"{"date":"D1","sync":false,"updated":[\#((contacts + extra).joined(separator: ","))],"deleted":["c7"]}"#
        let e =
            #"{"date":"D1","sync":true,"updated":[{"id":"e3","title":"E3","modified":"m"},{"id":"e1","title":"E1 moved","modified":"m2"}],"deleted":["e2"]}"#
        let p = #"{"updated":[{"id":"p1","name":"P","latitude":48.8566,"longitude":2.35,"modified":"m"}],"deleted":[],"date":"D1","sync":false}"#
        let t = #"""
            {"date":"D1","sync":false,"updated":[{"id":"t1","title":"T","lastMessageAt":"2026-01-02T00:00:00.000Z","messages":[{"id":"m2","text":"b","created":"2026-01-02T00:00:00.000Z"},{"id":"m1","text":"a","created":"2026-01-01T00:00:00.000Z"}],"nomore":true}],"deleted":[],"crop":false,"nomore":true}
            """#
        let w = #"{"date":"D1","sync":false,"updated":[],"deleted":[],"crop":false,"nomore":true}"#
        let f = #"""
            {"date":"D1","sync":false,"family":{"id":"fam","name":"Smith","modified":"m"},"members":{"updated":[{"id":"mem1","name":"Ann","modified":"m"}],"deleted":[]},"accounts":{"updated":[{"id":"acc","username":"alice","displayName":null,"modified":"m"}],"deleted":[]},"settings":{"id":"acc","locale":null,"timeZone":null,"notifications":true,"modified":"m"}}
            """#
        let v = #"{"date":"D1","lists":{}}"#
        let entries = [("ctcsync", c), ("evtsync", e), ("plcsync", p), ("msgsyncthread", t), ("wallsync", w), ("familysync", f), ("verify", v)].map {
            id, body in
            #"{"id":"\#(id)","status":200,"headers":{"ETag":"\"D1\""},"body":\#(body)}"#
        }
        return #"{"responses":[\#(entries.joined(separator: ","))]}"#
    }()

    /// A reader of `text` handed in pieces of `size` bytes.
    static func reader(_ text: String, pieces size: Int) -> JSONByteReader {
        let bytes = Data(text.utf8)
        var offset = 0
        return JSONByteReader {
            guard offset < bytes.count else { return nil }
            defer { offset += size }
            return bytes.subdata(in: offset..<min(offset + size, bytes.count))
        }
    }

    @Test("a group answer applied as it arrives, in pieces of any size, gives exactly the replica of the whole answer")
    func piecesGiveTheSameReplica() throws {
        let whole = try Self.seeded()
        let group = try JSONDecoder().decode(GroupAnswer.self, from: Data(Self.groupAnswer.utf8))
        let answers = Dictionary(uniqueKeysWithValues: group.responses.map { ($0.id, $0) })
        let expected = try whole.pool.write { db in try SyncClient.applySync(db, ServerModel.family.endpoints, answers) }
        let wholeDump = try Self.dump(whole)
        #expect(wholeDump.contains { $0.hasPrefix("contacts||kept|") && $0.contains("Edited") }, "the unsent edit stays on top")
        // Deletions before items: an id in both (which the protocol never sends) is stored.
        #expect(wholeDump.contains { $0.hasPrefix("contacts||c7|") })
        #expect(!wholeDump.contains { $0.hasPrefix("contacts||old1|") } && !wholeDump.contains { $0.hasPrefix("events||e2|") })
        #expect(wholeDump.contains { $0.hasPrefix("contacts||c5|") && $0.contains("Twice") })
        for size in [1, 7, 100, 4096, 1 << 20] {
            let streamed = try Self.seeded()
            let applied = try streamed.pool.write { db in
                var reader = Self.reader(Self.groupAnswer, pieces: size)
                return try SyncClient.applyStreamedSync(db, ServerModel.family.endpoints, &reader)
            }
            #expect(try Self.dump(streamed) == wholeDump, "pieces of \(size) bytes")
            #expect(applied.date == expected.date && applied.replaced == expected.replaced)
            #expect(applied.others["verify"]?.body?["date"] == "D1")
        }
    }

    @Test("a replaced list's temporary rows give their disk back once the sync is applied")
    func stagingGivesDiskBack() throws {
        let replica = try Golden.replica()
        let contacts = (0..<5000).map { #"{"id":"c\#($0)","firstName":"\#(String(repeating: "x", count: 400))","modified":"m"}"# }
        let answer = Self.groupAnswer.replacingOccurrences(
            of: #"{"id":"ctcsync","status":200,"headers":{"ETag":"\"D1\""},"body":{"date":"D1","sync":false,"updated":["#,
            with:
                #"{"id":"ctcsync","status":200,"headers":{"ETag":"\"D1\""},"body":{"date":"D1","sync":false,"updated":[\#(contacts.joined(separator: ",")),"#
        )
        #expect(answer != Self.groupAnswer)
        try replica.pool.write { db in
            var reader = Self.reader(answer, pieces: 1 << 16)
            _ = try SyncClient.applyStreamedSync(db, ServerModel.family.endpoints, &reader)
        }
        #expect(try Golden.ids(replica, .contacts).count > 5000)
        // The writer's temporary database (where the rows were gathered, 2 MiB of them) is back to a few pages: its
        // file, unlinked but open as long as the connection, would otherwise keep its largest size until the app quits.
        let pages = try replica.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA temp.page_count") ?? 0 }
        #expect(pages < 16, "temporary pages: \(pages)")
    }

    @Test("a failed, cut or malformed group answer applies nothing")
    func failuresApplyNothing() throws {
        let before = try Self.dump(try Self.seeded())
        let failed = Self.groupAnswer.replacingOccurrences(
            of: #"{"id":"msgsyncthread","status":200,"headers":{"ETag":"\"D1\""},"body":"#,
            with: #"{"id":"msgsyncthread","status":503,"body":{"code":"unavailable"},"ignored":"#)
        let otherDate = Self.groupAnswer.replacingOccurrences(
            of: #"{"date":"D1","sync":false,"updated":[],"deleted":[],"crop""#, with: #"{"date":"D2","sync":false,"updated":[],"deleted":[],"crop""#)
        let cases: [(String, (any Error) -> Bool)] = [
            (failed, { ($0 as? SyncClientError)?.status == 503 }),
            (String(Self.groupAnswer.prefix(Self.groupAnswer.count / 2)), { ($0 as? SyncClientError)?.status == 200 }),
            (Self.groupAnswer + "x", { ($0 as? SyncClientError)?.status == 200 }),
            (otherDate, { ($0 as? SyncClientError)?.description.contains("different dates") == true }),
            (
                Self.groupAnswer.replacingOccurrences(
                    of: #""status":200,"headers":{"ETag":"\"D1\""},"body":{"date":"D1","lists""#, with: #""status":401,"body":{"date":"D1","lists""#),
                { $0 is SubAnswerUnauthorized }
            ),
        ]
        for (text, matches) in cases {
            let replica = try Self.seeded()
            do {
                try replica.pool.write { db in
                    var reader = Self.reader(text, pieces: 1000)
                    _ = try SyncClient.applyStreamedSync(db, ServerModel.family.endpoints, &reader)
                }
                Issue.record("the answer applied")
            } catch {
                #expect(matches(error), "\(error)")
            }
            #expect(try Self.dump(replica) == before)
        }
    }

    /// A transport that answers downloads in small pieces, and can cut the body midway (a dropped connection).
    final class PiecesTransport: HTTPTransport {
        let server = FakeSyncServer()
        let cutAfter = Mutex<Int?>(nil)

        func send(_ call: HTTPCall) async throws -> HTTPAnswer { try await server.send(call) }

        func stream(_ call: HTTPCall) async throws -> (status: Int, bytes: AsyncThrowingStream<Data, any Error>) {
            try await server.stream(call)
        }

        func download(_ call: HTTPCall) async throws -> HTTPStreamedAnswer {
            let answer = try await server.send(call)
            let cut = cutAfter.withLock { $0 }
            return HTTPStreamedAnswer(
                status: answer.status, headers: answer.headers,
                body: AsyncThrowingStream { continuation in
                    var offset = 0
                    while offset < answer.body.count {
                        if let cut, offset >= cut {
                            continuation.finish(throwing: URLError(.networkConnectionLost))
                            return
                        }
                        continuation.yield(answer.body.subdata(in: offset..<min(offset + 97, answer.body.count)))
                        offset += 97
                    }
                    continuation.finish()
                })
        }
    }

    @Test("a sync interrupted mid-answer leaves the replica and its date unchanged; the next one completes")
    func interruptedSync() async throws {
        let transport = PiecesTransport()
        var configuration = SyncClientConfiguration(
            serverURL: URL(string: "https://fake.example")!, replicaPath: Scratch.path("streamed-"))
        configuration.transport = transport
        configuration.pushDelay = nil
        configuration.retryPolicy = RetryPolicy(attempts: 2, baseDelay: .milliseconds(1), sleep: { _ in })
        let client = try SyncClient(configuration: configuration)
        try await client.signUp(family: "Smith", username: "alice", password: "password1")
        for i in 0..<200 { transport.server.edit(.contacts, id: "c\(i)", json: ["firstName": .string("First \(i)"), "notes": "é \"q\""]) }
        try await client.sync()
        #expect(try client.all(Contact.self).count == 200)
        let before = try Self.dump(client.replica)
        let date = client.dateOfSync

        for i in 200..<400 { transport.server.edit(.contacts, id: "c\(i)", json: ["firstName": .string("First \(i)")]) }
        transport.server.remove(.contacts, id: "c0")
        transport.cutAfter.withLock { $0 = 5_000 }
        await #expect(throws: SyncClientError.self) { try await client.sync() }
        #expect(client.status.state == .offline)
        #expect(try Self.dump(client.replica) == before, "the previous replica, whole")
        #expect(client.dateOfSync == date)

        transport.cutAfter.withLock { $0 = nil }
        try await client.sync()
        let ids = try client.all(Contact.self).map(\.id)
        #expect(ids.count == 399 && !ids.contains("c0") && ids.contains("c399"))
        #expect(client.dateOfSync != date)
    }
}
