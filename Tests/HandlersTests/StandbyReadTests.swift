import Foundation
import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Issue 19, item 4 (protocol §13): reads from a real streaming hot standby (`pg_basebackup -R`). Clients syncing
/// under concurrent writes never diverge and never get `sync: false` because the standby lags; a standby stopped
/// under load costs no 5xx, and reads come back to it by themselves once it is up again.
@Suite("Reads from a hot standby", .sharingTheMachine, .serialized)
struct StandbyReadTests {
    // The time limits count the wait for `HeavyTestGate` too (see `OutageTests`).
    @Test("random clients syncing under writers, the standby 300 ms behind: exact, never sync false", .timeLimit(.minutes(10)))
    func laggingStandby() async throws {
        try await HeavyTestGate.shared.run { try await Self.runLagging(try await SharedServers.shared.servers()) }
    }

    @Test("the standby stopped under load, then started again: no 5xx, reads come back to it", .timeLimit(.minutes(10)))
    func stoppedStandby() async throws {
        try await HeavyTestGate.shared.run { try await Self.runStopped(try await SharedServers.shared.servers()) }
    }

    @Test("a read after a write in the same group sees it, though the standby has the client's date", .timeLimit(.minutes(10)))
    func groupReadsItsWrites() async throws {
        try await HeavyTestGate.shared.run { try await Self.runGroupReadsItsWrites(try await SharedServers.shared.servers()) }
    }

    @Test("--read-database with the SQLite backend is refused at start, with the reason")
    func refusedWithSQLite() async throws {
        var configuration = AppConfiguration()
        configuration.database = .sqlite(path: TestScratch.path("standby-", suffix: ".sqlite"))
        configuration.readDatabases = [try DatabaseURL(parsing: "postgres://postgres@127.0.0.1:5432/x")]
        var logger = Logger(label: "standby")
        logger.logLevel = .critical
        await #expect(throws: DatabaseURLError.self) { _ = try await buildApplication(configuration, logger: logger) }
    }

    // MARK: Scenarios

    static func application(_ servers: TestStandby) async throws -> some ApplicationProtocol {
        let urls = try await servers.newDatabase()
        var configuration = AppConfiguration()
        configuration.database = try DatabaseURL(parsing: urls.primary)
        configuration.readDatabases = [try DatabaseURL(parsing: urls.standby)]
        configuration.bcryptCost = testBcryptCost
        configuration.requestTimeLimit = .seconds(30)
        configuration.databaseDeadline = .seconds(25)
        var logger = Logger(label: "standby")
        logger.logLevel = .error
        return try await buildApplication(configuration, logger: logger)
    }

    static func runLagging(_ servers: TestStandby) async throws {
        let app = try await application(servers)
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let families = try await (0..<3).asyncMap { try await APIClient.signedUp(client, username: "user\($0)", family: "F\($0)") }
            let load = Load()
            // The standby is let in by the health check once it has replayed the schema.
            var first = try await Replica.start(families[0])
            try await waitForStandbyReads(client, replica: &first, load: load, within: .seconds(60))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, api) in families.enumerated() {
                    group.addTask { try await writer(api, name: "w\(n)", for: .seconds(6), load: load) }
                    for r in 0..<2 {
                        group.addTask {
                            var replica = try await Replica.start(api)
                            let end = ContinuousClock.now + .seconds(6)
                            var round = 0
                            while ContinuousClock.now < end {
                                round += 1
                                if round % 6 == 0 {
                                    // A date from the primary (a full list), at once asked of the lagging standby: it
                                    // has not reached that date, so the primary answers.
                                    replica = try await Replica.start(api)
                                } else {
                                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...400)))
                                }
                                try await replica.sync(load: load)
                            }
                            try await replica.converge(load: load)
                            print("standby: family \(n) client \(r) exact with \(replica.items.count) items")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let routes = try await readRoutes(APIClient(client: client))
            let total = routes.values.reduce(0, +)
            let share = total == 0 ? 0 : Double(routes["standby", default: 0]) / Double(total)
            print(
                "standby (300 ms behind): \(total) sync reads: \(routes["standby", default: 0]) on the standby (\(Int(share * 100)) %),"
                    + " \(routes["fallback", default: 0]) redone on the primary, \(routes["primary", default: 0]) on the primary;"
                    + " \(load.requests) requests, failures: \(load.failures)")
            #expect(load.failures.isEmpty, "\(load.failures)")
            #expect(routes["standby", default: 0] > 0, "no read went to the standby: \(routes)")
            #expect(routes["fallback", default: 0] > 0, "no date ahead of the standby was redone on the primary: \(routes)")
        }
    }

    static func runStopped(_ servers: TestStandby) async throws {
        let app = try await application(servers)
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let load = Load()
            // The standby is let in by the health check, and serves reads.
            let started = try await onStandby(client, load: load)
            let api = started.api
            var replica = started.replica
            let clock = ContinuousClock()
            let readers = 3
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await writer(api, name: "w", for: .seconds(6), load: load) }
                group.addTask {
                    try await Task.sleep(for: .seconds(2))
                    try await servers.stopStandby()
                }
                for _ in 0..<readers {
                    group.addTask {
                        var replica = try await Replica.start(api)
                        let end = clock.now + .seconds(6)
                        while clock.now < end {
                            try await Task.sleep(for: .milliseconds(Int.random(in: 0...200)))
                            try await replica.sync(load: load)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let duringOutage = try await readRoutes(APIClient(client: client))
            #expect(load.failures.isEmpty, "while the standby was stopped: \(load.failures)")
            #expect(duringOutage["primary", default: 0] + duringOutage["fallback", default: 0] > 0, "reads went to the primary: \(duringOutage)")
            try await servers.startStandby()
            let restarted = clock.now
            let before = duringOutage["standby", default: 0]
            try await waitForStandbyReads(client, replica: &replica, load: load, within: .seconds(90), above: before)
            let back = clock.now - restarted
            try await replica.converge(load: load)
            let after = try await readRoutes(APIClient(client: client))
            print(
                "standby stopped under load: \(load.requests) requests, failures: \(load.failures); reads then: \(duringOutage);"
                    + " after the restart the standby served reads again within \(back) (then \(after))")
            #expect(load.failures.isEmpty, "\(load.failures)")
        }
    }

    // MARK: Helpers

    /// One primary and one standby 300 ms behind for the suite (each test has its own database): starting them is
    /// the costly part on a loaded machine. They stop with the test process.
    actor SharedServers {
        static let shared = SharedServers()
        private var starting: Task<TestStandby, any Error>?

        func servers() async throws -> TestStandby {
            if let starting { return try await starting.value }
            let task = Task { try await TestStandby.start(applyDelay: "300ms") }
            starting = task
            return try await task.value
        }
    }

    /// Requests made and every answer that was not what the protocol promises (a status other than 200, `sync: false`).
    final class Load: Sendable {
        private let state = Mutex<(requests: Int, failures: [String])>((0, []))
        var requests: Int { state.withLock { $0.requests } }
        var failures: [String] { state.withLock { $0.failures } }
        func record(_ failure: String?) {
            state.withLock {
                $0.requests += 1
                if let failure, $0.failures.count < 20 { $0.failures.append(failure) }
            }
        }
    }

    /// A client's copy of the family's contacts, kept by deltas (deletes, then upserts, then the new date).
    struct Replica: Sendable {
        let api: APIClient
        var date: String
        var items: [String: JSONValue]

        static func start(_ api: APIClient) async throws -> Replica {
            let full = try await api.call(.get, "/api/v1/ctcsync")
            guard full.status == .ok, let date = full.json?["date"]?.stringValue, case .array(let updated)? = full.json?["updated"] else {
                throw TestFailure("first sync: \(full.status) \(full.body.prefix(300))")
            }
            var items: [String: JSONValue] = [:]
            for item in updated { if let id = item["id"]?.stringValue { items[id] = item } }
            return Replica(api: api, date: date, items: items)
        }

        /// One delta applied; its date is returned.
        @discardableResult
        mutating func sync(load: Load) async throws -> String {
            let answer = try await api.call(.get, "/api/v1/ctcsync?date=\(date)")
            guard answer.status == .ok, answer.json?["sync"] == .bool(true), let next = answer.json?["date"]?.stringValue,
                case .array(let updated)? = answer.json?["updated"], case .array(let deleted)? = answer.json?["deleted"]
            else {
                load.record("GET ctcsync: \(answer.status.code) \(answer.body.prefix(200))")
                return date
            }
            let ids = updated.compactMap { $0["id"]?.stringValue } + deleted.compactMap(\.stringValue)
            load.record(Set(ids).count == ids.count ? nil : "an id twice in one delta: \(answer.body.prefix(200))")
            for id in deleted { if let id = id.stringValue { items[id] = nil } }
            for item in updated { if let id = item["id"]?.stringValue { items[id] = item } }
            date = next
            return next
        }

        /// Syncs until its date is the server's newest (the writers have stopped), then checks the copy is the full list.
        mutating func converge(load: Load) async throws {
            for _ in 0..<100 {
                try await sync(load: load)
                let full = try await Replica.start(api)
                if full.date == date {
                    #expect(items.count == full.items.count && items.allSatisfy { full.items[$0.key] == $0.value }, "replica diverged")
                    return
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw TestFailure("the replica never reached the server's date")
        }
    }

    /// Writes, changes and deletes contacts of one family for a while.
    static func writer(_ api: APIClient, name: String, for duration: Duration, load: Load) async throws {
        let end = ContinuousClock.now + duration
        var n = 0
        while ContinuousClock.now < end {
            n += 1
            let id = "\(name)-\(Int.random(in: 0..<30))"
            let answer: APIClient.Answer
            if n % 5 == 0 {
                answer = try await api.call(.delete, "/api/v1/contacts/\(id)")
            } else {
                answer = try await api.call(.put, "/api/v1/contacts/\(id)", body: #"{"firstName":"\#(name) \#(n)"}"#)
            }
            // A delete of a contact never written is a 404, as the protocol says.
            let fine = answer.status == .ok || answer.status == .noContent || (n % 5 == 0 && answer.status == .notFound)
            load.record(fine ? nil : "\(n % 5 == 0 ? "DELETE" : "PUT") contact: \(answer.status.code) \(answer.body.prefix(200))")
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...30)))
        }
    }

    /// Protocol §6: "a read after a write in the same group sees it". Measured twice in the issue: groups [write, sync of
    /// the client's date] answered without their own write while a standby served reads. Each round waits until the
    /// standby answers the client's date itself (it has replayed it), then sends the group: 300 ms behind, the standby
    /// cannot have the group's write yet, so a read sent there would miss it.
    static func runGroupReadsItsWrites(_ servers: TestStandby) async throws {
        let app = try await application(servers)
        try await HangWatch.watched(app, "app", mode: .router) { client in
            let load = Load()
            let started = try await onStandby(client, load: load)
            let api = started.api
            var replica = started.replica
            var missed: [String] = []
            for round in 0..<8 {
                let date = replica.date
                let served = try await readRoutes(api)["standby", default: 0]
                let end = ContinuousClock.now + .seconds(60)
                // A paginated sync at the client's date: it reads (a full list's delta at the date the instance heard
                // its space at is answered with no read), from the standby once it has replayed the date.
                while try await readRoutes(api)["standby", default: 0] <= served {
                    guard ContinuousClock.now < end else { throw TestFailure("the standby never answered the client's date") }
                    _ = try await api.call(.get, "/api/v1/msgsyncthread?date=\(date)&nb=20&maxmessages=10")
                }
                let group = try await api.call(
                    .post, "/api/v1/group",
                    body: #"{"requests":[{"id":"w","method":"PUT","url":"/api/v1/contacts/g\#(round)","body":{"firstName":"G"}},"#
                        + #"{"id":"r","method":"GET","url":"/api/v1/ctcsync?date=\#(date)"}]}"#)
                guard case .array(let responses)? = group.json?["responses"], responses.count == 2,
                    case .array(let updated)? = responses[1]["body"]?["updated"]
                else { throw TestFailure("group: \(group.status) \(group.body.prefix(300))") }
                #expect(responses[0]["status"] == .number(200) || responses[0]["status"] == .number(201))
                if !updated.contains(where: { $0["id"]?.stringValue == "g\(round)" }) { missed.append("g\(round)") }
                try await replica.sync(load: load)
            }
            #expect(missed.isEmpty, "the group's own write missing from its read: \(missed)")
            #expect(load.failures.isEmpty, "\(load.failures)")
        }
    }

    /// A new family with one contact, and its replica once the standby has served one of its reads.
    static func onStandby(_ client: any TestClientProtocol, load: Load) async throws -> (api: APIClient, replica: Replica) {
        let api = try await APIClient.signedUp(client)
        var replica = try await Replica.start(api)
        _ = try await api.call(.put, "/api/v1/contacts/first", body: #"{"firstName":"First"}"#)
        try await waitForStandbyReads(client, replica: &replica, load: load, within: .seconds(60))
        return (api, replica)
    }

    /// `syncapi_read_transactions_total` by `served_by`, from `GET /metrics`.
    static func readRoutes(_ api: APIClient) async throws -> [String: Int] {
        let text = try await api.call(.get, "/metrics").body
        var routes: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("syncapi_read_transactions_total{") {
            guard let label = line.split(separator: "\"").dropFirst().first, let value = line.split(separator: " ").last.flatMap({ Double($0) })
            else {
                continue
            }
            routes[String(label)] = Int(value)
        }
        return routes
    }

    /// Syncs until the standby has served more than `above` reads.
    static func waitForStandbyReads(
        _ client: any TestClientProtocol, replica: inout Replica, load: Load, within limit: Duration, above: Int = 0
    ) async throws {
        let end = ContinuousClock.now + limit
        // A change after the replica's date, and deltas from that same date: each is a read (a delta at the date the
        // instance heard its space at is answered with none, decisions.md "Deltas answered from what the hub heard"),
        // which the standby serves once it is let in and has replayed the date.
        let from = replica.date
        _ = try await replica.api.call(.put, "/api/v1/contacts/standby-probe", body: #"{"firstName":"Probe"}"#)
        while ContinuousClock.now < end {
            var probe = replica
            probe.date = from
            try await probe.sync(load: load)
            if try await readRoutes(APIClient(client: client))["standby", default: 0] > above {
                try await replica.sync(load: load)
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("no read went to the standby within \(limit)")
    }
}

extension Range where Bound == Int {
    /// Maps in order, awaiting each.
    fileprivate func asyncMap<T>(_ transform: (Int) async throws -> T) async throws -> [T] {
        var values: [T] = []
        for value in self { values.append(try await transform(value)) }
        return values
    }
}
