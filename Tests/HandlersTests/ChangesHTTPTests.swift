import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import TestSupport
import Testing

/// `GET /changes`: a notice at once when the data already moved, another when a write lands, pings in between.
@Suite("Live change notices", .sharingTheMachine)
struct ChangesHTTPTests {
    static func fast(_ configuration: inout AppConfiguration) {
        configuration.changesPollInterval = .milliseconds(20)
        configuration.changesPingInterval = .milliseconds(300)
        configuration.changesMaxDuration = .milliseconds(3000)
    }

    /// The `data:` line of every `change` event; each event's `id:` must be its date (SSE resumption).
    static func events(_ body: String) -> [String] {
        body.components(separatedBy: "\n\n").filter { $0.contains("event: change") }.map { event in
            let lines = event.split(separator: "\n").map(String.init)
            let data = lines.last ?? ""
            guard let id = lines.first(where: { $0.hasPrefix("id: ") }), data == #"data: {"date":"\#(id.dropFirst(4))"}"# else {
                return "event without a matching id: \(event)"
            }
            return data
        }
    }

    @Test("notices name the new date of sync; pings keep the stream alive", arguments: Backend.allCases)
    func notices(backend: Backend) async throws {
        // Streams last 10 s here: the write must land within the first one even on a loaded machine (the full suite
        // was seen to hold a 5 s stream's pings back entirely).
        try await TestApp.run(
            backend,
            configure: {
                Self.fast(&$0); $0.changesMaxDuration = .seconds(10)
            }
        ) { client in
            let api = try await APIClient.signedUp(client)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // Nothing moved since the date: no notice until a write lands during the stream.
            async let stream = api.call(.get, "/api/v1/changes?date=\(date)")
            try await HardeningHTTPTests.waitForStreams(client, count: 1)
            _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"New"}"#)
            let answer = try await stream
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentType] == "text/event-stream")
            #expect(answer.headers[HTTPField.Name("X-Accel-Buffering")!] == "no")
            #expect(answer.headers[.cacheControl] == "no-cache")
            #expect(answer.body.hasPrefix("retry: "))
            let newDate = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            #expect(Self.events(answer.body) == [#"data: {"date":"\#(newDate)"}"#])
            #expect(answer.body.contains(": ping"))
            // A date the data already moved past: a notice at once.
            let moved = try await api.call(.get, "/api/v1/changes?date=\(date)")
            #expect(Self.events(moved.body) == [#"data: {"date":"\#(newDate)"}"#])
            let malformed = try await api.call(.get, "/api/v1/changes?date=not%20valid")
            #expect(malformed.status == .badRequest)
            // A reconnecting EventSource sends its last event id and no date: it resumes from there.
            let resumed = try await api.call(.get, "/api/v1/changes", headers: [HTTPField.Name("Last-Event-ID")!: newDate])
            #expect(Self.events(resumed.body).isEmpty)
            // A date the server cannot answer (above the counter): a notice at once, so the app syncs in full.
            let ahead = newDate.split(separator: ".").dropLast().joined(separator: ".") + ".999"
            let unanswerable = try await api.call(.get, "/api/v1/changes?date=\(ahead)")
            #expect(Self.events(unanswerable.body) == [#"data: {"date":"\#(newDate)"}"#])
        }
    }
    /// Security audit L6: the body's 5 s to start counted from before the start's reads, so a start slower than that
    /// answered 200 and then sent nothing (no `retry:`, no ping, no end), uncounted.
    @Test("a stream whose start reads take longer than 5 s still streams: retry, pings and its end")
    func slowStart() async throws {
        var configuration = try await TestApp.configuration(.postgres)
        Self.fast(&configuration)
        configuration.changesMaxDuration = .seconds(4)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let app = try await buildApplication(configuration, logger: logger)
        let database = configuration.database
        try await HangWatch.watched(app, "app", mode: .live) { client in
            let api = try await APIClient.signedUp(client)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // The families table held: the stream's start (the family's counter) waits for it, 6 s past the moment it
            // is seen waiting, so the start takes longer than the 5 s its body has to begin.
            let lock = TableLock(database: database, table: "families")
            let stream = try await lock.holding {
                let stream = Task { try await api.call(.get, "/api/v1/changes?date=\(date)") }
                try await lock.waitForWaiter()
                try await Task.sleep(for: .seconds(6))
                return stream
            }
            let answer = try await stream.value
            #expect(answer.status == .ok)
            #expect(answer.body.hasPrefix("retry: 2000\n\n") && answer.body.contains(": ping"), "\(answer.body.prefix(200))")
        }
    }
}
