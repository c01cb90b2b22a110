import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// `GET /changes`: a notice at once when the data already moved, another when a write lands, pings in between.
@Suite("Live change notices")
struct ChangesHTTPTests {
    static func fast(_ configuration: inout AppConfiguration) {
        configuration.changesPollInterval = .milliseconds(20)
        configuration.changesPingInterval = .milliseconds(300)
        configuration.changesMaxDuration = .milliseconds(3000)
    }

    static func events(_ body: String) -> [String] {
        body.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: change") }.map {
            String($0.split(separator: "\n").last ?? "")
        }
    }

    @Test("notices name the new date of sync; pings keep the stream alive", arguments: Backend.allCases)
    func notices(backend: Backend) async throws {
        try await TestApp.run(backend, configure: Self.fast) { client in
            let api = try await APIClient.signedUp(client)
            let date = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            // Nothing moved since the date: no notice until a write lands during the stream.
            async let stream = api.call(.get, "/api/v1/changes?date=\(date)")
            try await Task.sleep(for: .milliseconds(400))
            _ = try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"New"}"#)
            let answer = try await stream
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentType] == "text/event-stream")
            let newDate = try #require(try await api.call(.get, "/api/v1/ctcsync").json?["date"]?.stringValue)
            #expect(Self.events(answer.body) == [#"data: {"date":"\#(newDate)"}"#])
            #expect(answer.body.contains(": ping"))
            // A date the data already moved past: a notice at once.
            let moved = try await api.call(.get, "/api/v1/changes?date=\(date)")
            #expect(Self.events(moved.body) == [#"data: {"date":"\#(newDate)"}"#])
            let malformed = try await api.call(.get, "/api/v1/changes?date=not%20valid")
            #expect(malformed.status == .badRequest)
        }
    }
}
