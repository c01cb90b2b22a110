import Foundation
import SyncClient

/// `syncapi client …`: the SDK from a terminal or a script, to try a deployment by hand (seed 004: a command line
/// built on the shared client library). Every command opens the replica, does one thing and exits; `put` and
/// `delete` work offline (queued, pushed by the next `sync`).
public enum ClientCommandLine {
    public static let usage = """
        usage: syncapi client <command> --server URL --replica FILE [--json] [--page-size N] [--insecure]
          signup --family F --username U [--discard]   the password: SYNCAPI_PASSWORD, or one line on standard
          login --username U [--discard]               input (never an argument: ps and shell history would show it);
                                      another account than the replica's is refused while writes wait, unless --discard
          login --id-token-file FILE [--new-space NAME] [--discard]   sign in with an identity provider's ID token
                                      (the file holds it; - reads standard input); a first sign-in makes the account,
                                      with a home space named NAME when given
          logout [--discard] [--erase-failed]   push unsent writes (or discard them), revoke the token, empty the
                                      replica; the failed writes stay (for `pending`) unless --erase-failed
          sync                        push, then one group of every sync, applied in one transaction
          ls <collection> [--parent ID]
          get <collection> <id> [--parent ID]
          put <collection> <id> '<json>' [--parent ID]    offline: queued for the next sync
          delete <collection> <id> [--parent ID]          offline: queued for the next sync
          more <paginated or child collection> [--parent ID]
          watch                       sync on every change notice, push writes other processes queue, until Ctrl-C
          status | pending | verify | reset | help
          model                       the server's data model: its collections, kinds and sync endpoints
          spaces                      the account's spaces: id, name, role, home
          space-create --name N       a new space the account owns
          invite --role R [--uses N]  an invitation code to this replica's space (owners)
          accept <code>               join the space of an invitation
        --space ID: the replica holds that space (one replica per space); without it, the home space.
        collections: any of the server's data model, by name (`model` lists them)
        --server takes https://, or http:// to this machine; --insecure allows http:// to another host.
        """

    /// Runs one command and returns the process's exit code (0 success, 1 failure, 2 usage).
    public static func run(_ arguments: [String]) async -> Int32 {
        let parsed: Arguments
        do {
            parsed = try Arguments(arguments)
        } catch {
            fail("\(error)")
            return 2
        }
        guard let command = parsed.positional.first, command != "help", !parsed.flags.contains("help") else {
            print(usage)
            return arguments.isEmpty ? 2 : 0
        }
        var rest = parsed
        rest.positional.removeFirst()
        do {
            var configuration = try rest.configuration()
            if let size = rest.options["page-size"] {
                guard let size = Int(size), size > 0 else { throw SyncClientError.invalid("--page-size takes a positive number") }
                configuration.pageSize = size
            }
            let client = try SyncClient(configuration: configuration)
            try await run(command, rest, client)
            return 0
        } catch SyncClientError.invalid(let why) {
            fail(why)
            return 2
        } catch {
            fail("\(error)")
            return 1
        }
    }

    /// A line on stdout at once (unbuffered: `watch` runs until killed, often with its output in a pipe or a file).
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func fail(_ message: String) {
        let line = message.split(separator: "\n").first.map(String.init) ?? message
        FileHandle.standardError.write(Data("syncapi client: \(line)\n".utf8))
    }

    private static func run(_ command: String, _ arguments: Arguments, _ client: SyncClient) async throws {
        let json = arguments.json
        switch command {
        case "signup":
            try await client.signUp(
                family: try arguments.option("family"), username: try arguments.option("username"), password: try arguments.password(),
                discardingPendingWrites: arguments.flags.contains("discard"))
            print(json ? Output.json(Output.Signed(signedIn: true)) : "signed up and signed in")
        case "login":
            if arguments.options["id-token-file"] != nil {
                let signedIn = try await client.signIn(
                    idToken: try arguments.idToken(), space: arguments.options["new-space"],
                    discardingPendingWrites: arguments.flags.contains("discard"))
                print(
                    json
                        ? Output.json(Output.Signed(signedIn: true))
                        : signedIn.created ? "account made and signed in (\(signedIn.accountID))" : "signed in (\(signedIn.accountID))")
                return
            }
            try await client.logIn(
                username: try arguments.option("username"), password: try arguments.password(),
                discardingPendingWrites: arguments.flags.contains("discard"))
            print(json ? Output.json(Output.Signed(signedIn: true)) : "signed in")
        case "logout":
            try await client.logOut(
                discardingPendingWrites: arguments.flags.contains("discard"), erasingFailedWrites: arguments.flags.contains("erase-failed"))
            print(json ? Output.json(Output.Signed(signedIn: false)) : "signed out; the replica is empty")
        case "sync":
            let report = try await client.sync()
            print(json ? Output.json(Output.Sync(report)) : describe(report))
        case "ls":
            let items = try client.items(try arguments.collection(0), parent: arguments.parent)
            if json {
                print(JSONValue.array(items.map { .object($0) }).text)
            } else {
                for item in items { print(item.jsonText) }
            }
        case "get":
            let collection = try arguments.collection(0)
            guard let item = try client.item(collection, id: try arguments.positional(1), parent: arguments.parent) else {
                throw SyncClientError.server(status: 404, code: "not_found", detail: "not in the replica")
            }
            print(item.jsonText)
        case "put":
            let text = try arguments.positional(2)
            guard let body = (try? JSONValue.parse(text))?.objectValue else { throw SyncClientError.invalid("the item must be a JSON object") }
            try await client.save(try arguments.collection(0), id: try arguments.positional(1), parent: arguments.parent, json: body)
            print(json ? Output.json(Output.Queued(queued: true)) : "saved locally; queued for the next sync")
        case "delete":
            try await client.delete(try arguments.collection(0), id: try arguments.positional(1), parent: arguments.parent)
            print(json ? Output.json(Output.Queued(queued: true)) : "deleted locally; queued for the next sync")
        case "more":
            let complete = try await client.loadMore(try arguments.collection(0), parent: arguments.parent)
            print(json ? Output.json(Output.More(nomore: complete)) : complete ? "the whole list is here" : "more remain")
        case "model":
            let model = try await client.serverModel(refresh: true)
            let collections = model.collections.values.sorted { $0.name < $1.name }.map {
                Output.ModelCollection(name: $0.name.rawValue, kind: $0.kind.rawValue, sync: $0.sync, parent: $0.parent?.rawValue)
            }
            if json {
                print(Output.json(Output.Model(model: model.name, digest: model.digest, collections: collections)))
            } else {
                print("model \(model.name) (digest \(model.digest.prefix(12)))")
                for c in collections {
                    print("  \(c.name): \(c.kind)" + (c.sync.map { ", synced by \($0)" } ?? "") + (c.parent.map { ", child of \($0)" } ?? ""))
                }
            }
        case "spaces":
            let spaces = try await client.spaces()
            if json {
                print(Output.json(spaces))
            } else {
                for space in spaces { print("\(space.id)  \(space.role)\(space.home == true ? " (home)" : "")  \(space.name)") }
            }
        case "space-create":
            let space = try await client.createSpace(name: try arguments.option("name"))
            print(json ? Output.json(space) : "\(space.id)  \(space.role)  \(space.name)")
        case "invite":
            let uses = try arguments.options["uses"].map { value in
                guard let n = Int(value), n > 0 else { throw SyncClientError.invalid("--uses takes a positive number") }
                return n
            }
            let invitation = try await client.invite(role: try arguments.option("role"), uses: uses ?? 1)
            print(json ? Output.json(invitation) : invitation.code)
        case "accept":
            let space = try await client.acceptInvitation(code: try arguments.positional(0))
            print(json ? Output.json(space) : "joined \(space.id) as \(space.role): \(space.name)")
        case "status":
            print(describeStatus(client, json: json))
        case "pending":
            print(try describePending(client, json: json))
        case "verify":
            let report = try await client.verify()
            if json {
                print(Output.json(Output.Verify(checked: report.checked, repaired: report.repaired, date: report.date)))
            } else {
                print(
                    report.isExact
                        ? "exact: \(report.checked.joined(separator: ", "))" : "repaired: \(report.repaired.joined(separator: ", "))")
            }
        case "reset":
            try await client.reset()
            print(json ? Output.json(Output.Done(done: true)) : "the replica is empty; the next sync downloads everything")
        case "watch":
            try await watch(client, json: json)
        default:
            throw SyncClientError.invalid("unknown command \(command) (see `syncapi client help`)")
        }
    }

    /// Syncs, then keeps the change stream open and prints every sync until the process is interrupted. Writes that
    /// another process queues in the same replica file (`syncapi client put`) are pushed within two seconds: the
    /// queue is read every second (another process's commits are not observed otherwise).
    private static func watch(_ client: SyncClient, json: Bool) async throws {
        let report = try await client.sync()
        emit(json ? Output.json(Output.Sync(report)) : describe(report))
        client.startLive()
        let poller = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let pending = try? client.pendingOperations(), !pending.isEmpty else { continue }
                if let pushed = try? await client.push(), pushed.pushed + pushed.failed > 0, !json {
                    emit("pushed: \(pushed.pushed) writes, \(pushed.failed) refused")
                }
            }
        }
        defer { poller.cancel() }
        if !json { emit("watching (Ctrl-C to stop)") }
        var last = client.status.lastSuccessfulSync
        for await status in client.statusUpdates where status.lastSuccessfulSync != last {
            last = status.lastSuccessfulSync
            if json {
                emit(Output.json(Output.Status(status, client)))
            } else {
                emit("synced: date \(client.dateOfSync ?? "-"); pending \(status.pendingWrites), failed \(status.failedWrites)")
            }
        }
    }

    static func describe(_ report: SyncReport) -> String {
        var line = "synced: \(report.pushed) writes pushed, \(report.failed) refused"
        if report.conflicts > 0 { line += ", \(report.conflicts) conflicts settled" }
        if !report.replaced.isEmpty { line += "; replaced \(report.replaced.joined(separator: ", "))" }
        return line + "; date \(report.date ?? "-")"
    }

    static func describeStatus(_ client: SyncClient, json: Bool) -> String {
        let status = client.status
        if json { return Output.json(Output.Status(status, client)) }
        let lists = status.lists.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.count)\($0.value.complete ? "" : "+")" }
        return """
            signed in: \(client.isSignedIn); date: \(client.dateOfSync ?? "-"); pending \(status.pendingWrites), failed \(status.failedWrites)
            lists: \(lists.joined(separator: ", "))
            """
    }

    static func describePending(_ client: SyncClient, json: Bool) throws -> String {
        let pending = try client.pendingOperations().map {
            Output.Operation(op: $0.kind.rawValue, collection: $0.collection.rawValue, id: $0.id, parent: $0.parent)
        }
        let failed = try client.failedOperations().map {
            Output.Operation(
                op: $0.kind.rawValue, collection: $0.collection.rawValue, id: $0.id, parent: $0.parent, status: $0.status, code: $0.code.rawValue,
                detail: $0.detail)
        }
        if json { return Output.json(Output.Pending(pending: pending, failed: failed)) }
        var lines = pending.map { "pending \($0.op) \($0.collection)/\($0.parent.map { "\($0)/" } ?? "")\($0.id)" }
        lines += failed.map { "failed \($0.op) \($0.collection)/\($0.id): \($0.status ?? 0) \($0.code ?? "") \($0.detail ?? "")" }
        return lines.isEmpty ? "nothing pending" : lines.joined(separator: "\n")
    }
}

extension Output.Status {
    init(_ status: SyncStatus, _ client: SyncClient) {
        self.init(
            signedIn: client.isSignedIn, state: Output.state(status.state), date: client.dateOfSync, pending: status.pendingWrites,
            failed: status.failedWrites, lists: status.lists.mapValues { Output.List(count: $0.count, complete: $0.complete) },
            lastError: status.lastError.map { "\($0)" })
    }
}
