import Foundation
import SyncAPI
import SyncPostgres
import SyncSQLite
import TestSupport
import Testing

/// The engine's pure parts: JSON, times, ids, dates of sync, schemas, and the migrations shipped in the binary.
@Suite("Engine units", .sharingTheMachine)
struct EngineUnitTests {
    @Test(
        "JSON round-trips through parser and writer",
        arguments: [
            #"{"a":1,"b":[true,false,null],"c":"é\n\"\\","d":-0.5,"e":{}}"#, #"[]"#, #""\u0001""#, #"1e-05"#,
        ])
    func jsonRoundTrip(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(try JSONParser.parse(JSONWriter.encode(value)) == value)
    }

    @Test(
        "strict JSON: these are rejected",
        arguments: [
            "", "{", "{\"a\":1,}", "[1,]", "01", "1.", "-", "tru", "\"\\x\"", "{\"a\":1}{}", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "nan",
        ])
    func jsonRejects(text: String) {
        #expect(throws: JSONParser.ParseError.self) { try JSONParser.parse(text) }
    }

    @Test("writer output is deterministic and keeps member order")
    func writerOrder() {
        let value = JSONValue.object([("z", .number(1)), ("a", .number(2.5)), ("m", .string("\u{7}"))])
        #expect(JSONWriter.encode(value) == #"{"z":1,"a":2.5,"m":"\u0007"}"#)
    }

    @Test("RFC 3339 parsing and the modified format")
    func timestamps() {
        #expect(Timestamp.parseDateTime("1970-01-01T00:00:00Z") == 0)
        #expect(Timestamp.parseDateTime("1970-01-01T01:00:00.5+01:00") == 500)
        #expect(Timestamp.parseDateTime("2024-02-29T12:00:00Z") != nil)
        #expect(Timestamp.parseDateTime("2023-02-29T12:00:00Z") == nil)
        #expect(Timestamp.parseDateTime("2024-13-01T00:00:00Z") == nil)
        #expect(Timestamp.parseDateTime("2024-01-01 00:00:00Z") == nil)
        #expect(Timestamp.parseDateTime("2024-01-01T00:00:00") == nil)
        #expect(Timestamp.format(epochMilliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(epochMilliseconds: 1_795_307_528_332) == "2026-11-22T00:32:08.332Z")
        #expect(Timestamp.parseDate("2026-02-30") == nil)
        #expect(Timestamp.parseDate("2026-02-28") != nil)
    }

    @Test(
        "item ids",
        arguments: [
            ("a", true), ("A.b_c:d-1", true), (".", false), ("..", false), ("", false), ("a/b", false),
            ("é", false), (String(repeating: "x", count: 64), true), (String(repeating: "x", count: 65), false),
        ])
    func ids(id: String, valid: Bool) {
        #expect(ItemID.isValid(id) == valid)
    }

    @Test("dates of sync: malformed is an error, foreign is unanswerable, ours is a position")
    func syncTokens() throws {
        let db = "0123456789abcdef"
        let family = "00000000-0000-4000-8000-000000000001"
        let token = SyncToken(databaseID: db, spaceID: family, version: 42).string
        #expect(try SyncToken.parse(token, databaseID: db, spaceID: family) == .position(42, generation: 0, history: ""))
        #expect(try SyncToken.parse(nil, databaseID: db, spaceID: family) == .absent)
        #expect(try SyncToken.parse(token, databaseID: "fedcba9876543210", spaceID: family) == .unanswerable)
        #expect(try SyncToken.parse(token, databaseID: db, spaceID: "00000000-0000-4000-8000-000000000002") == .unanswerable)
        #expect(try SyncToken.parse("\(db).\(family).042", databaseID: db, spaceID: family) == .unanswerable)
        #expect(try SyncToken.parse("\(db).\(family).-1", databaseID: db, spaceID: family) == .unanswerable)
        for bad in ["", "a b", String(repeating: "a", count: 129), "é", "a/b"] {
            #expect(throws: SyncError.self) { try SyncToken.parse(bad, databaseID: db, spaceID: family) }
        }
        #expect(token.count <= 128)
        // Off the first history (after a failover): the history rides at the end, after the generation.
        let history = "0123456789abcdef"
        let moved = SyncToken(databaseID: db, spaceID: family, version: 7, generation: 3, history: history).string
        #expect(moved == "\(db).\(family).7.3~\(history)")
        #expect(try SyncToken.parse(moved, databaseID: db, spaceID: family) == .position(7, generation: 3, history: history))
        #expect(try SyncToken.parse("\(db).\(family).7~\(history)", databaseID: db, spaceID: family) == .position(7, generation: 0, history: history))
        for foreign in [
            "\(db).\(family).7~", "\(db).\(family).7~ABCDEF0123456789", "\(db).\(family).7~0123", "\(db).\(family).7~\(history)~\(history)",
        ] {
            #expect(try SyncToken.parse(foreign, databaseID: db, spaceID: family) == .unanswerable, "\(foreign)")
        }
        #expect(moved.count <= 128)
    }

    /// A space crossed from the first history ("") to `b` at counter 8: which dates its line holds.
    @Test(
        "a date is held by the space's line only on its history, or on the one it came from up to the fork",
        arguments: [
            // (date's history, date's version, held)
            ("b", 9, true), ("b", 3, true), ("", 8, true), ("", 3, true), ("", 9, false), ("", 12, false), ("a", 5, false),
            ("a", 9, false),
        ] as [(String, Int64, Bool)])
    func lineage(history: String, version: Int64, held: Bool) {
        let crossed = SpaceLineage(history: "b", forkFrom: "", forkVersion: 8)
        #expect(DatePosition(version: version, history: history).isHeld(by: crossed) == held)
        // Never crossed: the first history's dates only.
        #expect(DatePosition(version: version, history: history).isHeld(by: .original) == history.isEmpty)
        // The column a statement reads.
        #expect(SpaceLineage(column: "b//8") == crossed)
        #expect(SpaceLineage(column: nil) == nil)
    }

    @Test("schemas fill defaults in declaration order and name the bad field")
    func schemas() throws {
        let content = try Collections.events.schema.canonicalContent(
            of: try JSONParser.parse(#"{"start":"2026-01-01T00:00:00Z","title":"T","modified":"x","end":null}"#), pathID: "e")
        #expect(
            JSONWriter.encode(.object(content))
                == #"{"title":"T","start":"2026-01-01T00:00:00Z","end":null,"allDay":false,"location":null,"contactIds":[]}"#)
        do {
            _ = try Collections.contacts.schema.canonicalContent(of: try JSONParser.parse(#"{"emails":[""]}"#), pathID: "c")
            Issue.record("accepted an empty email")
        } catch let error as SyncError {
            #expect(error.code == .invalidField && error.field == "emails")
        }
        #expect(throws: SyncError.invalidField("firstName", "firstName or lastName is required.")) {
            try Collections.contacts.schema.canonicalContent(of: try JSONParser.parse(#"{"notes":"n"}"#), pathID: "c")
        }
    }

    @Test("the migrations in the binary are the files in sql/ (run scripts/embed-sql after editing sql/)")
    func embeddedMigrations() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for (backend, embedded) in [("postgres", PostgresMigrations.all), ("sqlite", SQLiteMigrations.all)] {
            let folder = root.appendingPathComponent("sql/\(backend)")
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
            #expect(embedded.map(\.name) == files)
            for migration in embedded {
                let text = try String(contentsOf: folder.appendingPathComponent(migration.name), encoding: .utf8)
                #expect(migration.sql == text.trimmingCharacters(in: .newlines), "\(backend)/\(migration.name)")
            }
        }
    }
}

/// `--database` URLs: what parses, and the one-line errors of what does not.
@Suite("Database URLs", .sharingTheMachine)
struct DatabaseURLTests {
    @Test("valid URLs")
    func valid() throws {
        #expect(try DatabaseURL(parsing: "sqlite:data/syncapi.sqlite") == .sqlite(path: "data/syncapi.sqlite"))
        #expect(
            try DatabaseURL(parsing: "postgres://me:p%40ss@db.example:6543/sync?sslmode=require")
                == .postgres(host: "db.example", port: 6543, username: "me", password: "p@ss", database: "sync", requireTLS: true))
        #expect(try DatabaseURL(parsing: "postgresql://me@localhost/sync").description == "postgres://me@localhost:5432/sync")
        // TLS by default for another host; in clear only when asked, or on this machine (security audit L6).
        #expect(
            try DatabaseURL(parsing: "postgres://me@db.example/sync")
                == .postgres(host: "db.example", port: 5432, username: "me", password: nil, database: "sync", requireTLS: true))
        #expect(
            try DatabaseURL(parsing: "postgres://me@db.example/sync?sslmode=disable")
                == .postgres(host: "db.example", port: 5432, username: "me", password: nil, database: "sync", requireTLS: false))
        #expect(
            try DatabaseURL(parsing: "postgres://me@127.0.0.1:5433/sync")
                == .postgres(host: "127.0.0.1", port: 5433, username: "me", password: nil, database: "sync", requireTLS: false))
    }

    @Test(
        "invalid URLs give a message, not a crash",
        arguments: ["mysql://x", "sqlite:", "postgres://me@host", "postgres://host/db", "x", "postgres://me@host/db?sslmode=maybe"])
    func invalid(text: String) {
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(parsing: text) }
    }

    @Test("the media an item body names: every well-formed media URL, once, across the old and the new body")
    func mediaHashes() {
        let a = String(repeating: "a", count: 64)
        let b = String(repeating: "b", count: 64)
        let old = #"{"id":"p1","mediaUrl":"/api/v1/media/\#(a)"}"#
        let new = #"{"id":"p1","mediaUrl":"/api/v1/media/\#(b)","text":"see /api/v1/media/\#(a) and /api/v1/media/xyz"}"#
        #expect(MediaURL.hashes(in: [old, new]) == [a, b])
        #expect(MediaURL.hashes(in: [nil, #"{"id":"p2","mediaUrl":"https://example.org/x.jpg"}"#]).isEmpty)
    }
}
