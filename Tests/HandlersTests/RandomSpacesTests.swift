import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import Logging
import SyncAPI
import Synchronization
import TestSupport
import Testing

/// Issue 38's random clients: accounts in overlapping spaces with all three roles write what their role allows (and
/// try what it does not) while every (account, space) replica syncs by deltas, concurrently, through one instance on
/// SQLite and through two instances on one PostgreSQL database. After each round every replica equals exactly what
/// its account may read in its space: the acknowledged writes of the space's shared lists, and of its private list only
/// its own; no 5xx, and every refusal is the 403 its role calls for.
@Suite("Random clients across spaces", .sharingTheMachine)
struct RandomSpacesTests {
    /// The lists of `SpacePermissionsHTTPTests.model`, with the role each needs to write (read: `secrets` needs a
    /// member, the others a reader).
    static let lists: [(name: String, sync: String, write: SpaceRole, read: SpaceRole, privateList: Bool)] = [
        ("notes", "ntsync", .member, .reader, false), ("rules", "rlsync", .owner, .reader, false),
        ("posts", "pstsync", .member, .reader, false), ("secrets", "scsync", .member, .member, false),
        ("diary", "dysync", .member, .reader, true),
    ]

    /// One account's view of one space: its role, its replica of each readable list (id → text) and their dates.
    final class Replica: @unchecked Sendable {
        let account: Int
        let space: String
        let role: SpaceRole
        var lists: [String: [String: String]] = [:]
        var dates: [String: String] = [:]
        init(account: Int, space: String, role: SpaceRole) {
            self.account = account
            self.space = space
            self.role = role
        }
    }

    /// The acknowledged state: (space, list, owner account for a private list or -1) → id → text.
    final class Truth: Sendable {
        private let state = Mutex<[String: [String: String]]>([:])
        static func key(_ space: String, _ list: String, _ account: Int?) -> String { "\(space)|\(list)|\(account ?? -1)" }
        func set(_ key: String, _ id: String, _ text: String?) { state.withLock { $0[key, default: [:]][id] = text } }
        func get(_ key: String) -> [String: String] { state.withLock { $0[key] ?? [:] } }
        /// How many writes were acknowledged and refused.
        let tally = Mutex<(acknowledged: Int, refused: Int)>((0, 0))
        var counts: String { tally.withLock { "\($0.acknowledged) writes acknowledged, \($0.refused) refused with 403" } }
    }

    @Test(
        "accounts in overlapping spaces, all roles, writers and delta-syncing replicas: every replica is what its account may read",
        arguments: Backend.allCases)
    func randomClients(backend: Backend) async throws {
        let model = try DataModel(json: Array(SpacePermissionsHTTPTests.model.utf8))
        var configuration = try await TestApp.configuration(backend)
        configuration.model = model
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let first = try await buildApplication(configuration, logger: logger)
        // PostgreSQL: a second instance on the same database; SQLite: the one instance twice.
        if backend == .postgres {
            let second = try await buildApplication(configuration, logger: logger)
            try await HangWatch.watched(first, "first", mode: .router) { one in
                try await HangWatch.watched(second, "second", mode: .router) { two in try await Self.run([one, two]) }
            }
        } else {
            try await HangWatch.watched(first, "sqlite", mode: .router) { one in try await Self.run([one]) }
        }
    }

    static func run(_ instances: [any TestClientProtocol]) async throws {
        var rng = SystemRandomNumberGenerator()
        // Four accounts, three spaces (each owned by its creator), memberships drawn at random: every role appears.
        var accounts: [String] = []
        for n in 0..<4 {
            let signedUp = try await APIClient.signedUp(instances[0], username: "user\(n)", family: "Family \(n)")
            accounts.append(try #require(signedUp.token))
        }
        let tokens = accounts
        let api: @Sendable (Int) -> APIClient = { account in
            APIClient(client: instances[Int.random(in: 0..<instances.count)], token: tokens[account])
        }
        var joined: [Replica] = []
        for owner in 0..<3 {
            let space = try #require(
                try await api(owner).call(.post, "/api/v1/spaces", body: #"{"name":"Space \#(owner)"}"#).json?["id"]?.stringValue)
            joined.append(Replica(account: owner, space: space, role: .owner))
            // Each space: a reader and a member among the three others, the third an owner or not in it, shuffled.
            var roles: [SpaceRole?] = [.reader, .member, Bool.random(using: &rng) ? .owner : nil]
            roles.shuffle(using: &rng)
            for (account, role) in zip((0..<4).filter { $0 != owner }, roles) {
                guard let role else { continue }
                let code = try await SpacesHTTPTests.invite(api(owner), space, role: role.rawValue)
                #expect(try await SpacesHTTPTests.accept(api(account), code).status == .ok)
                joined.append(Replica(account: account, space: space, role: role))
            }
        }
        let replicas = joined
        let truth = Truth()
        for round in 0..<8 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for replica in replicas {
                    group.addTask {
                        for op in 0..<4 { try await Self.write(replica, api(replica.account), truth, tag: "r\(round)o\(op)") }
                        try await Self.sync(replica, api(replica.account))
                    }
                }
                try await group.waitForAll()
            }
            // Quiet: one more sync each brings every replica to exactly what its account may read.
            for replica in replicas {
                try await Self.sync(replica, api(replica.account))
                for list in lists where replica.role >= list.read {
                    let expected = truth.get(Truth.key(replica.space, list.name, list.privateList ? replica.account : nil))
                    #expect(replica.lists[list.name] ?? [:] == expected, "round \(round), user\(replica.account) \(replica.role) \(list.name)")
                    // A full list answers the same.
                    let full = try await api(replica.account).call(.get, "/api/v1/spaces/\(replica.space)/\(list.sync)")
                    #expect(Self.texts(full.json?["updated"]) == expected, "round \(round), full \(list.name)")
                }
            }
        }
        let roles = Dictionary(grouping: replicas, by: \.role).mapValues(\.count)
        let held = replicas.reduce(0) { $0 + $1.lists.values.reduce(0) { $0 + $1.count } }
        print(
            "random spaces (\(instances.count) instance(s)): \(replicas.count) replicas \(roles.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }), \(held) items held at the end, \(truth.counts)"
        )
        // Nothing lands in a space from an account that is not in it, whatever it sends.
        for account in 0..<4 {
            for space in Set(replicas.map(\.space)) where !replicas.contains(where: { $0.space == space && $0.account == account }) {
                let answer = try await api(account).call(.put, "/api/v1/spaces/\(space)/notes/intruder", body: #"{"text":"x"}"#)
                #expect(answer.status == .notFound)
            }
        }
    }

    /// One random write: a put or a delete of one of the account's own ids, in a list its role may or may not write.
    static func write(_ replica: Replica, _ api: APIClient, _ truth: Truth, tag: String) async throws {
        let list = lists[Int.random(in: 0..<lists.count)]
        let id = "u\(replica.account)-\(Int.random(in: 0..<4))"
        let path = "/api/v1/spaces/\(replica.space)/\(list.name)/\(id)"
        let delete = Int.random(in: 0..<4) == 0
        let text = "\(tag) by user\(replica.account)"
        let answer = delete ? try await api.call(.delete, path) : try await api.call(.put, path, body: #"{"text":"\#(text)"}"#)
        let key = Truth.key(replica.space, list.name, list.privateList ? replica.account : nil)
        guard replica.role >= list.write else {
            #expect(
                answer.status == .forbidden && answer.json?["code"] == .string("forbidden"), "\(replica.role) writes \(list.name): \(answer.status)")
            truth.tally.withLock { $0.refused += 1 }
            return
        }
        if delete {
            // 204, or 404 for an id never written (or deleted already).
            #expect(answer.status == .noContent || answer.status == .notFound, "\(answer.status) \(answer.body)")
            if answer.status == .noContent {
                truth.set(key, id, nil)
                truth.tally.withLock { $0.acknowledged += 1 }
            }
        } else {
            #expect(answer.status == .ok, "\(answer.status) \(answer.body)")
            if answer.status == .ok {
                truth.set(key, id, text)
                truth.tally.withLock { $0.acknowledged += 1 }
            }
        }
    }

    /// A delta sync of every list the replica's role reads (a 403 for the one it may not read).
    static func sync(_ replica: Replica, _ api: APIClient) async throws {
        for list in lists {
            let date = replica.dates[list.name].map { "?date=\($0)" } ?? ""
            let answer = try await api.call(.get, "/api/v1/spaces/\(replica.space)/\(list.sync)\(date)")
            guard replica.role >= list.read else {
                #expect(answer.status == .forbidden, "\(replica.role) reads \(list.name): \(answer.status)")
                continue
            }
            #expect(answer.status == .ok, "\(answer.status) \(answer.body)")
            guard let json = answer.json, let newDate = json["date"]?.stringValue else { continue }
            var items = json["sync"] == .bool(true) ? replica.lists[list.name] ?? [:] : [:]
            for (id, text) in texts(json["updated"]) { items[id] = text }
            if case .array(let deleted)? = json["deleted"] {
                for id in deleted.compactMap(\.stringValue) { items[id] = nil }
            }
            replica.lists[list.name] = items
            replica.dates[list.name] = newDate
        }
    }

    static func texts(_ value: JSONValue?) -> [String: String] {
        guard case .array(let items)? = value else { return [:] }
        var out: [String: String] = [:]
        for item in items {
            if let id = item["id"]?.stringValue { out[id] = item["text"]?.stringValue ?? "" }
        }
        return out
    }
}
