import Foundation
import SyncAPI
import TestSupport
import Testing

/// Several instances behind a load balancer (issue 9): three `syncapi serve` processes on one PostgreSQL database.
/// Writers and a syncing client alternate between them; the client always converges to the server's state, and a
/// stream on one instance hears writes taken by another.
@Suite("Three instances on one PostgreSQL", .sharingTheMachine)
struct InstancesProcessTests {
    @Test("writers and a syncing client alternating between three instances converge; notices cross instances")
    func threeInstances() async throws {
        try await HeavyTestGate.shared.run {
            let database = try await TestPostgres.shared.newDatabaseURL()
            var servers: [ServerProcess] = []
            defer { for server in servers { server.killAndReap() } }
            for _ in 0..<3 { servers.append(try await ServerProcess.start(["--database", database])) }
            let bases = servers.map { "http://localhost:\($0.port)" }
            let auth = ["-H", "Authorization: Bearer \(try await Curl.signup(bases[0]))"]
            var rng = SystemRandomNumberGenerator()
            var replica: [String: String] = [:]
            var date: String?
            for round in 0..<8 {
                // Three writers, each on its own instance this round, write at once.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<3 {
                        let base = bases[(writer + round) % 3]
                        group.addTask {
                            for n in 0..<4 {
                                let id = "c\(Int.random(in: 0..<12))"
                                let write =
                                    n == 3
                                    ? ["-X", "DELETE", "\(base)/api/v1/contacts/\(id)"]
                                    : ["-X", "PUT", "\(base)/api/v1/contacts/\(id)", "-d", #"{"firstName":"w\#(writer)-r\#(round)-\#(n)"}"#]
                                let status = try await Curl.call(auth + write).status
                                guard status == 200 || status == 204 else { throw TestFailure("write answered \(status)") }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                // The client syncs from any instance with the date another one gave it.
                let base = bases[Int.random(in: 0..<3, using: &rng)]
                let answer = try await Curl.call(auth + ["\(base)/api/v1/ctcsync" + (date.map { "?date=\($0)" } ?? "")])
                let json = try JSONParser.parse(answer.body)
                guard case .array(let updated)? = json["updated"], case .array(let deleted)? = json["deleted"] else {
                    throw TestFailure("bad answer \(answer.body)")
                }
                if json["sync"] == .bool(false) { replica = [:] }
                for id in deleted.compactMap(\.stringValue) { replica[id] = nil }
                for item in updated { replica[item["id"]!.stringValue!] = JSONWriter.encode(item) }
                date = json["date"]?.stringValue
                // Exact against every instance's full list.
                for base in bases {
                    let full = try JSONParser.parse(try await Curl.call(auth + ["\(base)/api/v1/ctcsync"]).body)
                    guard case .array(let items)? = full["updated"] else { throw TestFailure("bad full answer") }
                    let server = Dictionary(uniqueKeysWithValues: items.map { ($0["id"]!.stringValue!, JSONWriter.encode($0)) })
                    // The writers are done: every instance names the same state by the same date.
                    #expect(full["date"]?.stringValue == date)
                    #expect(replica == server, "round \(round) against \(base)")
                }
            }
            // A stream on each instance hears a write taken by the next one.
            for index in 0..<3 {
                let folder = try ProcessTests.temporaryFolder()
                let streamed = "\(folder)/stream.txt"
                let current = try #require(SyncAPITestJSON.string(try await Curl.call(auth + ["\(bases[index])/api/v1/ctcsync"]).body, "date"))
                let curl = try ServerProcess.spawn(
                    ["curl", "-s", "-N", "-m", "4", "-o", streamed] + auth + ["\(bases[index])/api/v1/changes?date=\(current)"],
                    output: "\(folder)/curl.log")
                try await Curl.awaitGauge(bases[index], "syncapi_live_streams", atLeast: 1)
                let other = bases[(index + 1) % 3]
                #expect(try await Curl.call(auth + ["-X", "PUT", "\(other)/api/v1/contacts/n\(index)", "-d", #"{"firstName":"N"}"#]).status == 200)
                _ = await ServerProcess(pid: curl, port: 0, log: "").waitForExit(within: .seconds(10))
                let events = (try? String(contentsOfFile: streamed, encoding: .utf8)) ?? ""
                #expect(events.contains("event: change"), "instance \(index) heard nothing of a write on another: \(events)")
            }
            print("instances: 3 processes, 8 rounds of 3 writers, the client exact after every round; notices crossed all 3")
        }
    }
}
