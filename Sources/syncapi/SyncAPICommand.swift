import ArgumentParser
import Foundation
import Handlers
import Hummingbird
import Logging
import SyncAPI

/// The `syncapi` executable: gathers configuration (flags, then environment, then defaults) and runs a command.
@main
struct SyncAPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncapi", abstract: "Delta-sync API server for offline-first mobile apps.",
        subcommands: [Serve.self, Migrate.self, Purge.self], defaultSubcommand: Serve.self)
}

/// Options shared by every command that opens the database.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE (env SYNCAPI_DATABASE).")
    var database: String?

    /// The database URL: flag, then `SYNCAPI_DATABASE`, then the embedded default.
    func url() throws -> DatabaseURL {
        let text = database ?? ProcessInfo.processInfo.environment["SYNCAPI_DATABASE"] ?? "sqlite:data/syncapi.sqlite"
        do {
            return try DatabaseURL(parsing: text)
        } catch {
            throw ValidationError(error.description)
        }
    }
}

/// Prints one line and exits non-zero: an operator error needs no stack trace.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("syncapi: \(message)\n".utf8))
    exit(1)
}

/// `syncapi serve`: the HTTP server.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP server (migrates the database first).")

    @Option(help: "Address to listen on.") var hostname = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @OptionGroup var database: DatabaseOptions
    @Flag(help: "Turn off POST /signup.") var disableSignup = false
    @Option(help: "bcrypt cost of password hashes (4–31).") var bcryptCost: UInt8 = 12
    @Option(help: "Largest request body, in bytes (a group's whole body).") var bodyMaxBytes = 1 << 20
    @Option(help: "Most sub-requests in one POST /group.") var groupMaxRequests = 20

    func run() async throws {
        var configuration = AppConfiguration()
        configuration.hostname = hostname
        configuration.port = port
        configuration.database = try database.url()
        configuration.accounts.signupEnabled = !disableSignup && ProcessInfo.processInfo.environment["SYNCAPI_SIGNUP"] != "false"
        configuration.bcryptCost = bcryptCost
        configuration.bodyMaxBytes = bodyMaxBytes
        configuration.groupMaxRequests = groupMaxRequests
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4 to 31") }
        guard bodyMaxBytes >= 1024 else { throw ValidationError("--body-max-bytes must be at least 1024") }
        guard groupMaxRequests >= 1 else { throw ValidationError("--group-max-requests must be at least 1") }
        var logger = Logger(label: "syncapi")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
        do {
            let app = try await buildApplication(configuration, logger: logger)
            try await app.runService()
        } catch let error as SyncError where error.code == "unavailable" {
            fail("cannot reach the database \(configuration.database)")
        } catch let error as DatabaseURLError {
            fail(error.description)
        } catch {
            fail("\(error)")
        }
    }
}

/// `syncapi migrate`: schema only, for deployments that migrate before rolling out.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or upgrade the database schema, then exit.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let url = try database.url()
        try await database.withMigratedStore(doing: "migration") { _, _ in print("syncapi: \(url) is migrated") }
    }
}

/// `syncapi purge`: tombstone purge on demand.
struct Purge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete tombstones older than the retention now (serve also does it every hour), then exit.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Keep tombstones this many seconds (dates of sync older than that answer sync: false).")
    var retentionSeconds = 30 * 86_400

    func run() async throws {
        let url = try database.url()
        let retention = retentionSeconds
        try await database.withMigratedStore(doing: "purge") { store, logger in
            let purged = try await TombstonePurger(store: store, retentionSeconds: retention, logger: logger).purgeOnce()
            print("syncapi: purged \(purged) tombstones from \(url)")
        }
    }
}

extension DatabaseOptions {
    /// Opens and migrates the database (its client running meanwhile), runs `body`, and turns every failure into
    /// one line and exit 1: the shared frame of the one-shot commands.
    func withMigratedStore(doing what: String, _ body: @escaping @Sendable (any SyncStore, Logger) async throws -> Void) async throws {
        let url = try url()
        var logger = Logger(label: "syncapi")
        logger.logLevel = .warning
        do {
            let opened = try OpenedStore.open(url, logger: logger)
            let quiet = logger
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await opened.runClient() }
                defer { group.cancelAll() }
                try await opened.store.migrate()
                try await body(opened.store, quiet)
            }
        } catch let error as SyncError where error.code == "unavailable" {
            fail("cannot reach the database \(url)")
        } catch let error as DatabaseURLError {
            fail(error.description)
        } catch {
            fail("\(what) of \(url) failed: \(error)")
        }
    }
}
