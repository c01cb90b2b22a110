import Foundation
import SyncClient

/// `syncapi client …`: the SDK from a terminal or a script, to try a deployment by hand (seed 004: a command line
/// built on the shared client library). Every command opens the replica, does one thing and exits; `put` and
/// `delete` work offline (queued, pushed by the next `sync`).
public enum ClientCommandLine {
    public static let usage = """
        usage: syncapi client <command> --server URL --replica FILE [--json]
          signup --family F --username U --password P
          login --username U --password P
          logout [--discard]
          sync | status | pending | verify | reset | watch
          ls <collection> [--parent ID]
          get <collection> <id> [--parent ID]
          put <collection> <id> '<json>' [--parent ID]
          delete <collection> <id> [--parent ID]
          more <threads|wall|messages|comments> [--parent ID]
        collections: \(SyncCollection.allCases.map(\.rawValue).joined(separator: ", "))
        """

    /// Runs one command; returns the process's exit code.
    public static func run(_ arguments: [String]) async -> Int32 {
        do {
            var parsed = try Arguments(arguments)
            guard let command = parsed.positional.first, command != "help" else {
                print(usage)
                return arguments.isEmpty ? 2 : 0
            }
            parsed.positional.removeFirst()
            let client = try SyncClient(configuration: try parsed.configuration())
            try await run(command, parsed, client)
            return 0
        } catch {
            FileHandle.standardError.write(Data("syncapi client: \(error)\n".utf8))
            return 1
        }
    }

    private static func run(_ command: String, _ arguments: Arguments, _ client: SyncClient) async throws {
        let json = arguments.flags.contains("json")
        switch command {
        case "signup":
            try await client.signUp(
                family: try arguments.option("family"), username: try arguments.option("username"), password: try arguments.option("password"))
            print(json ? #"{"signedIn":true}"# : "signed up and signed in")
        case "login":
            try await client.logIn(username: try arguments.option("username"), password: try arguments.option("password"))
            print(json ? #"{"signedIn":true}"# : "signed in")
        case "logout":
            try await client.logOut(discardingPendingWrites: arguments.flags.contains("discard"))
            print(json ? #"{"signedIn":false}"# : "signed out; the replica is empty")
        case "sync":
            let report = try await client.sync()
            print(
                json
                    ? JSONValue.object([
                        "pushed": .number(Double(report.pushed)), "failed": .number(Double(report.failed)),
                        "date": report.date.map { .string($0) } ?? .null,
                    ]).text : "synced: \(report.pushed) writes pushed, \(report.failed) refused; date \(report.date ?? "-")")
        case "ls":
            let items = try client.items(try arguments.collection(0), parent: arguments.options["parent"])
            if json {
                print(JSONValue.array(items.map { .object($0) }).text)
            } else {
                for item in items { print(item.jsonText) }
            }
        case "get":
            guard let item = try client.item(try arguments.collection(0), id: try arguments.positional(1), parent: arguments.options["parent"]) else {
                throw SyncClientError.invalid("not in the replica")
            }
            print(item.jsonText)
        case "put":
            guard let body = try JSONValue.parse(try arguments.positional(2)).objectValue else {
                throw SyncClientError.invalid("the item must be a JSON object")
            }
            try await client.save(try arguments.collection(0), id: try arguments.positional(1), parent: arguments.options["parent"], json: body)
            print(json ? #"{"queued":true}"# : "saved locally; queued for the next sync")
        case "delete":
            try await client.delete(try arguments.collection(0), id: try arguments.positional(1), parent: arguments.options["parent"])
            print(json ? #"{"queued":true}"# : "deleted locally; queued for the next sync")
        case "more":
            guard let list = PagedList(rawValue: try arguments.positional(0)) else {
                throw SyncClientError.invalid("more takes threads, wall, messages or comments")
            }
            let complete = try await client.loadMore(list, parent: arguments.options["parent"])
            print(json ? JSONValue.object(["nomore": .bool(complete)]).text : complete ? "the whole list is here" : "more remain")
        case "status":
            let status = client.status
            let lists = status.lists.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.count)\($0.value.complete ? "" : "+")" }
            if json {
                print(
                    JSONValue.object([
                        "signedIn": .bool(client.isSignedIn), "date": client.dateOfSync.map { .string($0) } ?? .null,
                        "pending": .number(Double(status.pendingWrites)), "failed": .number(Double(status.failedWrites)),
                        "lists": .object(Dictionary(uniqueKeysWithValues: status.lists.map { ($0.key, JSONValue.number(Double($0.value.count))) })),
                    ]).text)
            } else {
                print(
                    "signed in: \(client.isSignedIn); date: \(client.dateOfSync ?? "-"); pending \(status.pendingWrites), failed \(status.failedWrites)"
                )
                print("lists: " + lists.joined(separator: ", "))
            }
        case "pending":
            let pending = try client.pendingOperations()
            let failed = try client.failedOperations()
            if json {
                print(
                    JSONValue.object([
                        "pending": .array(
                            pending.map {
                                .object(["collection": .string($0.collection.rawValue), "id": .string($0.id), "op": .string($0.kind.rawValue)])
                            }),
                        "failed": .array(
                            failed.map { .object(["collection": .string($0.collection.rawValue), "id": .string($0.id), "code": .string($0.code)]) }),
                    ]).text)
            } else {
                for op in pending { print("pending \(op.kind.rawValue) \(op.collection.rawValue)/\(op.id)") }
                for op in failed { print("failed \(op.kind.rawValue) \(op.collection.rawValue)/\(op.id): \(op.status) \(op.code) \(op.detail)") }
            }
        case "verify":
            let report = try await client.verify()
            print(
                json
                    ? JSONValue.object([
                        "checked": .array(report.checked.map { .string($0) }), "repaired": .array(report.repaired.map { .string($0) }),
                    ]).text
                    : report.repaired.isEmpty
                        ? "exact: \(report.checked.joined(separator: ", "))" : "repaired: \(report.repaired.joined(separator: ", "))")
        case "reset":
            try await client.reset()
            print("the replica is empty; the next sync downloads everything")
        case "watch":
            try await client.sync()
            client.startLive()
            print("watching (Ctrl-C to stop)")
            for await status in client.statusUpdates {
                if let last = status.lastSuccessfulSync { print("\(last): synced, date \(client.dateOfSync ?? "-")") }
            }
        default:
            throw SyncClientError.invalid("unknown command \(command)\n\(usage)")
        }
    }
}

/// `--name value` options, `--flag` flags and positional arguments.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []
    static let flagNames: Set<String> = ["json", "discard"]

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                let name = String(argument.dropFirst(2))
                if Self.flagNames.contains(name) {
                    flags.insert(name)
                } else {
                    guard index + 1 < arguments.count else { throw SyncClientError.invalid("--\(name) needs a value") }
                    options[name] = arguments[index + 1]
                    index += 1
                }
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }

    func option(_ name: String) throws -> String {
        guard let value = options[name] else { throw SyncClientError.invalid("--\(name) is required") }
        return value
    }

    func positional(_ index: Int) throws -> String {
        guard index < positional.count else { throw SyncClientError.invalid("missing argument\n\(ClientCommandLine.usage)") }
        return positional[index]
    }

    func collection(_ index: Int) throws -> SyncCollection {
        let name = try positional(index)
        guard let collection = SyncCollection(rawValue: name) else { throw SyncClientError.invalid("unknown collection \(name)") }
        return collection
    }

    func configuration() throws -> SyncClientConfiguration {
        guard let server = URL(string: try option("server")) else { throw SyncClientError.invalid("--server is not a URL") }
        return SyncClientConfiguration(serverURL: server, replicaPath: try option("replica"))
    }
}
