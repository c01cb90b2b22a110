import ArgumentParser
import Foundation
import Handlers
import Hummingbird
import Logging
import SyncAPI
import SyncStorage

/// The `syncapi` executable: gathers configuration (flags, then environment, then defaults) and runs a command.
@main
struct SyncAPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncapi", abstract: "Delta-sync API server for offline-first mobile apps.",
        subcommands: [Serve.self, Migrate.self, Purge.self, RestoreEpoch.self, ModelCommand.self, ClientCommand.self], defaultSubcommand: Serve.self)
}

/// Options shared by every command that opens the database.
/// `--model FILE` (or `SYNCAPI_MODEL`): the data model to serve (protocol §12); the default model without it.
struct ModelOption: ParsableArguments {
    @Option(help: "Data model file (env SYNCAPI_MODEL); default: the family app (models/family.json).") var model: String?
    @Flag(help: "Apply a model whose changes are breaking (every client then reloads its data).") var acceptBreakingChanges = false

    /// The model, checked; a model the server cannot serve stops the command before anything changes.
    func load() throws -> DataModel {
        guard let file = model ?? ProcessInfo.processInfo.environment["SYNCAPI_MODEL"] else { return Collections.model }
        do {
            return try DataModel(contentsOf: file)
        } catch {
            fail("\(file): \(error.description)")
        }
    }
}

struct DatabaseOptions: ParsableArguments {
    @Option(help: "sqlite:PATH or postgres://USER@HOST:PORT/DATABASE (env SYNCAPI_DATABASE; keep passwords out of it).")
    var database: String?
    @Option(help: "File holding the PostgreSQL password (env SYNCAPI_DATABASE_PASSWORD_FILE), instead of one in the URL.")
    var databasePasswordFile: String?
    @Flag(help: "--database is a pooler in transaction mode (PgBouncer): no named prepared statements (env SYNCAPI_DATABASE_POOLER=1).")
    var databasePooler = false
    @Option(help: "A direct URL of the same PostgreSQL for the LISTEN connection, required with --database-pooler (env SYNCAPI_LISTEN_DATABASE).")
    var listenDatabase: String?

    /// Whether `--database` is a pooler in transaction mode.
    var pooler: Bool { databasePooler || ProcessInfo.processInfo.environment["SYNCAPI_DATABASE_POOLER"] == "1" }

    /// The direct URL for `LISTEN`, with the same password file as `--database` when it names no password.
    func listenURL() throws -> DatabaseURL? {
        guard let text = listenDatabase ?? ProcessInfo.processInfo.environment["SYNCAPI_LISTEN_DATABASE"] else { return nil }
        do {
            var url = try DatabaseURL(parsing: text)
            if case .postgres(_, _, _, nil, _, _) = url, case .postgres(_, _, _, let password?, _, _) = try self.url() {
                url = url.withPassword(password)
            }
            return url
        } catch let error as DatabaseURLError {
            throw ValidationError("--listen-database: \(error.description)")
        }
    }

    /// The hot standbys' URLs (`--read-database`, repeatable, then `SYNCAPI_READ_DATABASES`, comma-separated), each
    /// with the password of `--database` when it names none.
    func readURLs(_ flags: [String]) throws -> [DatabaseURL] {
        let texts =
            flags.isEmpty
            ? (ProcessInfo.processInfo.environment["SYNCAPI_READ_DATABASES"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty } : flags
        return try texts.map { text in
            do {
                var url = try DatabaseURL(parsing: text)
                guard case .postgres(_, _, _, let own, _, _) = url else {
                    throw ValidationError("--read-database names a PostgreSQL hot standby: a postgres:// URL")
                }
                if own == nil, case .postgres(_, _, _, let password?, _, _) = try self.url() { url = url.withPassword(password) }
                return url
            } catch let error as DatabaseURLError {
                throw ValidationError("--read-database: \(error.description)")
            }
        }
    }

    /// The database URL: flag, then `SYNCAPI_DATABASE`, then the embedded default; the password from a file when
    /// one is named. Errors never echo the URL's password.
    func url() throws -> DatabaseURL {
        let environment = ProcessInfo.processInfo.environment
        let text = database ?? environment["SYNCAPI_DATABASE"] ?? "sqlite:data/syncapi.sqlite"
        var url: DatabaseURL
        do {
            url = try DatabaseURL(parsing: text)
        } catch {
            throw ValidationError(error.description)
        }
        if let file = databasePasswordFile ?? environment["SYNCAPI_DATABASE_PASSWORD_FILE"] {
            guard let password = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ValidationError("cannot read the database password file \(file)")
            }
            url = url.withPassword(password.trimmingCharacters(in: .newlines))
            // Readable by others: said, not refused (container secrets are often mounted 0444).
            if let mode = (try? FileManager.default.attributesOfItem(atPath: file))?[.posixPermissions] as? Int, mode & 0o077 != 0 {
                FileHandle.standardError.write(
                    Data("syncapi: warning: the database password file \(file) is readable by others (mode \(String(mode, radix: 8)))\n".utf8))
            }
        }
        return url
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
    @OptionGroup var modelOption: ModelOption
    @Flag(help: "Turn off POST /signup, and the accounts a first ID-token sign-in (POST /token) would create.") var disableSignup = false
    @Flag(help: "Turn off passwords: signup, login, password changes and password accounts (sign-in only through --identity).")
    var disablePasswords = false
    @Option(help: "bcrypt cost of password hashes (4–31).") var bcryptCost: UInt8 = 12
    @Option(help: "Largest request body, in bytes (a group's whole body).") var bodyMaxBytes = 1 << 20
    @Option(help: "MiB of request bodies read or held at once by this instance (media uploads aside); past it 503 at once.")
    var maxBodyMemory = 128
    @Option(help: "MiB of --max-body-memory one client address may hold at once; past it 429 at once.")
    var maxBodyMemoryPerAddress = 16
    @Option(help: "Most sub-requests in one POST /group.") var groupMaxRequests = 20
    @Option(help: "Largest medium POST /media takes, in bytes.") var mediaMaxBytes = 20 << 20
    @Option(help: "PEM certificate chain: serve HTTPS (TLS 1.2+, HTTP/2 by ALPN). Needs --tls-key.") var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.") var tlsKey: String?
    @Option(help: "Address of a proxy whose X-Forwarded-For is believed (repeatable).") var trustedProxy: [String] = []
    @Option(help: "Seconds within which every request is answered (503 past it).") var requestTimeLimit = 15
    @Option(help: "Seconds for a connection's first request head to arrive (then it is closed).") var headerReadTimeout = 10
    @Option(help: "Seconds a request body may stall between two pieces.") var bodyReadTimeout = 30
    @Option(help: "Seconds an idle keep-alive connection stays open.") var idleTimeout = 60
    @Option(help: "On SIGTERM, seconds the requests in flight may take to finish before they are cancelled.")
    var shutdownGrace = 30
    @Option(help: "Seconds serve waits at start for a database that does not answer yet, before it exits.")
    var databaseStartWait = 60
    @Option(help: "Most open connections.") var maxConnections = 10_000
    @Option(help: "Most open connections (HTTP/2 streams) of one client address, IPv6 by /64; trusted proxies are exempt.")
    var maxConnectionsPerAddress = 256
    @Option(help: "Logins and password checks per client address per minute (and in a burst), before any database work.")
    var loginRate = 20
    @Option(help: "Signups and new accounts per client address per minute (and in a burst), before any database work.")
    var signupRate = 10
    @Option(help: "Most open /changes streams per account.") var maxStreamsPerAccount = 8
    @Option(help: "Most open /changes streams on this instance.") var maxStreamsPerInstance = 10_000
    @Option(help: "Seconds a /changes stream stays open before the server ends it (the client reconnects with its date).")
    var changesMaxDuration = 300
    @Option(help: "Most answers of one account downloading from a database snapshot at once (full lists, groups of reads).")
    var maxSnapshotAnswersPerAccount = 4
    @Option(
        help:
            "Most answers downloading from a database snapshot at once on this instance (default 8); PostgreSQL gives them a pool of their own of this size."
    )
    var maxSnapshotAnswersPerInstance: Int?
    @Option(help: "Most answers of one family downloading from a database snapshot at once (default half the instance's, at least the account's).")
    var maxSnapshotAnswersPerFamily: Int?
    @Option(help: "MiB of full-list answers kept in memory by date of sync, answered again without reading their rows (0: none).")
    var fullListCacheMib = FullListCache.defaultCapacity >> 20
    @Option(
        help:
            "KiB a second below which an answer downloading from a database snapshot, after its first 10 s, gives its place up to an answer that waits for one (0: never)."
    )
    var snapshotAnswerMinRate = 64
    @Option(
        help:
            "PostgreSQL connections for statements, opened on demand (env SYNCAPI_DATABASE_CONNECTIONS; default twice the cores plus 2: about what the database runs at once without a long tail). Snapshot answers have their own pool."
    )
    var databaseConnections: Int?
    @Option(help: "Most accounts of one family.") var maxAccountsPerFamily = 20
    @Option(help: "Most spaces one account owns.") var maxOwnedSpacesPerAccount = SpaceLimits().owned
    @Option(help: "Most spaces one account belongs to.") var maxSpacesPerAccount = SpaceLimits().memberships
    @Option(
        help:
            "A JSON file of the OpenID Connect providers whose ID tokens POST /api/v1/token exchanges (protocol §14; docs/operations.md)."
    )
    var identity: String?
    @Option(help: "Most live items of one family.") var maxItemsPerFamily: Int64 = FamilyQuotas().items
    @Option(help: "Most bytes of item content one family stores.") var maxStoredBytesPerFamily: Int64 = FamilyQuotas().storedBytes
    @Option(help: "Most bytes of media one family stores.") var maxMediaBytesPerFamily: Int64 = FamilyQuotas().mediaBytes
    @Option(help: "Most password hashes queued at once (default 4 per core); past it, account calls answer 503.")
    var maxPendingHashes: Int?
    @Option(
        help:
            "A PostgreSQL hot standby of --database for exact sync reads (repeatable; env SYNCAPI_READ_DATABASES, comma-separated).")
    var readDatabase: [String] = []
    @Option(help: "Seconds a --read-database may lag before reads leave it (default 5; env SYNCAPI_READ_MAX_LAG).")
    var readMaxLag: Double?

    func run() async throws {
        var configuration = AppConfiguration()
        configuration.model = try modelOption.load()
        configuration.acceptBreakingModelChanges = modelOption.acceptBreakingChanges
        configuration.hostname = hostname
        configuration.port = port
        configuration.database = try database.url()
        configuration.databasePooler = database.pooler
        configuration.listenDatabase = try database.listenURL()
        configuration.readDatabases = try database.readURLs(readDatabase)
        if !configuration.readDatabases.isEmpty, case .sqlite = configuration.database {
            throw ValidationError("--read-database names PostgreSQL hot standbys: it needs a postgres:// --database, not SQLite")
        }
        let maxLag = readMaxLag ?? ProcessInfo.processInfo.environment["SYNCAPI_READ_MAX_LAG"].flatMap { Double($0) } ?? 5
        guard maxLag > 0, maxLag.isFinite else { throw ValidationError("--read-max-lag must be more than 0 seconds") }
        configuration.readMaxLag = .milliseconds(Int64(maxLag * 1000))
        configuration.accounts.signupEnabled = !disableSignup && ProcessInfo.processInfo.environment["SYNCAPI_SIGNUP"] != "false"
        configuration.accounts.passwordsEnabled = !disablePasswords
        configuration.bcryptCost = bcryptCost
        configuration.bodyMaxBytes = bodyMaxBytes
        guard (1...1_048_576).contains(maxBodyMemory) else { throw ValidationError("--max-body-memory is 1 to 1048576 (MiB)") }
        configuration.bodyMemoryBytes = maxBodyMemory << 20
        guard (1...maxBodyMemory).contains(maxBodyMemoryPerAddress) else {
            throw ValidationError("--max-body-memory-per-address is 1 to --max-body-memory (MiB)")
        }
        configuration.bodyMemoryPerAddressBytes = maxBodyMemoryPerAddress << 20
        configuration.groupMaxRequests = groupMaxRequests
        configuration.mediaMaxBytes = mediaMaxBytes
        guard mediaMaxBytes >= 1024 else { throw ValidationError("--media-max-bytes must be at least 1024") }
        configuration.tlsCertificatePath = tlsCert
        configuration.tlsKeyPath = tlsKey
        configuration.trustedProxies = Set(trustedProxy)
        configuration.requestTimeLimit = .seconds(requestTimeLimit)
        configuration.databaseDeadline = .seconds(max(1, requestTimeLimit - 2))
        configuration.maxConnections = maxConnections
        configuration.maxConnectionsPerAddress = maxConnectionsPerAddress
        guard maxConnectionsPerAddress >= 1, loginRate >= 1, signupRate >= 1 else {
            throw ValidationError("--max-connections-per-address, --login-rate and --signup-rate are at least 1")
        }
        configuration.loginRate = .init(burst: max(loginRate, 30), perMinute: loginRate)
        configuration.signupRate = .init(burst: signupRate, perMinute: signupRate)
        configuration.headerReadTimeout = .seconds(headerReadTimeout)
        configuration.bodyReadTimeout = .seconds(bodyReadTimeout)
        configuration.idleTimeout = .seconds(idleTimeout)
        guard headerReadTimeout >= 1, bodyReadTimeout >= 1, idleTimeout >= 1 else { throw ValidationError("timeouts are at least 1 second") }
        configuration.maxStreamsPerAccount = maxStreamsPerAccount
        configuration.maxStreamsPerInstance = maxStreamsPerInstance
        guard changesMaxDuration >= 1 else { throw ValidationError("--changes-max-duration is at least 1 second") }
        configuration.changesMaxDuration = .seconds(changesMaxDuration)
        configuration.maxPendingHashes = maxPendingHashes
        guard maxAccountsPerFamily >= 1, maxItemsPerFamily >= 1, maxStoredBytesPerFamily >= 1024, maxMediaBytesPerFamily >= 0 else {
            throw ValidationError("family quotas: at least 1 account, 1 item and 1024 stored bytes; media bytes may be 0")
        }
        configuration.accounts.maxAccountsPerFamily = maxAccountsPerFamily
        guard maxOwnedSpacesPerAccount >= 1, maxSpacesPerAccount >= 1 else {
            throw ValidationError("--max-owned-spaces-per-account and --max-spaces-per-account are at least 1")
        }
        configuration.spaces = SpaceLimits(owned: maxOwnedSpacesPerAccount, memberships: maxSpacesPerAccount, members: maxAccountsPerFamily)
        if let identity {
            do {
                configuration.identity = try IdentityProviders.load(path: identity)
            } catch {
                throw ValidationError("--identity: \(error)")
            }
        }
        let connections =
            databaseConnections ?? ProcessInfo.processInfo.environment["SYNCAPI_DATABASE_CONNECTIONS"].flatMap { Int($0) }
            ?? PoolSize.defaultConnections
        guard connections >= 2 else { throw ValidationError("--database-connections is at least 2") }
        let snapshotAnswers = maxSnapshotAnswersPerInstance ?? 8
        guard maxSnapshotAnswersPerAccount >= 1, snapshotAnswers >= 1 else {
            throw ValidationError("--max-snapshot-answers-per-account and --max-snapshot-answers-per-instance are at least 1")
        }
        configuration.maxSnapshotAnswersPerAccount = maxSnapshotAnswersPerAccount
        configuration.maxSnapshotAnswersPerInstance = snapshotAnswers
        guard (maxSnapshotAnswersPerFamily ?? 1) >= 1, (0...1_048_576).contains(snapshotAnswerMinRate) else {
            throw ValidationError("--max-snapshot-answers-per-family is at least 1 and --snapshot-answer-min-rate 0 to 1048576 (KiB/s)")
        }
        configuration.maxSnapshotAnswersPerFamily = maxSnapshotAnswersPerFamily
        guard (0...65_536).contains(fullListCacheMib) else { throw ValidationError("--full-list-cache-mib is 0 to 65536") }
        configuration.fullListCacheBytes = fullListCacheMib << 20
        configuration.snapshotAnswerPace = SnapshotBudget.Pace(minimumRate: snapshotAnswerMinRate * 1024)
        // Snapshot answers get a pool of their own, as large as their budget: held by slow downloads, they never take
        // a connection from the statements (PostgreSQL; SQLite has no pool).
        configuration.databasePool = PoolSize(connections: connections, snapshotConnections: snapshotAnswers)
        configuration.quotas = FamilyQuotas(
            items: maxItemsPerFamily, storedBytes: maxStoredBytesPerFamily, mediaBytes: maxMediaBytesPerFamily)
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard requestTimeLimit >= 2 else { throw ValidationError("--request-time-limit must be at least 2 seconds") }
        guard shutdownGrace >= 1 else { throw ValidationError("--shutdown-grace must be at least 1 second") }
        configuration.shutdownGrace = .seconds(shutdownGrace)
        guard databaseStartWait >= 0 else { throw ValidationError("--database-start-wait is 0 or more seconds") }
        configuration.databaseStartWait = .seconds(databaseStartWait)
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4 to 31") }
        guard bodyMaxBytes >= 1024 else { throw ValidationError("--body-max-bytes must be at least 1024") }
        guard groupMaxRequests >= 1 else { throw ValidationError("--group-max-requests must be at least 1") }
        var logger = Logger(label: "syncapi")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
        // As many client connections as the operator allowed the process (the hard limit); see `DescriptorBudget`.
        DescriptorBudget.raiseLimit()
        do {
            let app = try await buildApplication(configuration, logger: logger)
            try await runUntilShutdown(app, grace: configuration.shutdownGrace, logger: logger)
        } catch let error as SyncError where error.code == .unavailable {
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
    @OptionGroup var modelOption: ModelOption

    func run() async throws {
        // A model the server could not serve stops here, before the database is touched.
        let model = try modelOption.load()
        let accept = modelOption.acceptBreakingChanges
        let url = try database.url()
        try await database.withMigratedStore(doing: "migration") { opened, _ in
            do {
                for change in try await ModelRecord.apply(model, to: opened.roles.evolution, acceptBreaking: accept) {
                    print("syncapi: model change: \(change)")
                }
            } catch let error as ModelError {
                fail(error.description)
            }
            print("syncapi: \(url) is migrated, serving model \(model.name)")
        }
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
        try await database.withMigratedStore(doing: "purge") { opened, logger in
            let purged = try await TombstonePurger(store: opened.roles.purger, media: opened.media, retentionSeconds: retention, logger: logger)
                .purgeOnce()
            print("syncapi: purged \(purged) tombstones from \(url)")
        }
    }
}

extension DatabaseOptions {
    /// Opens and migrates the database (its client running meanwhile), runs `body`, and turns every failure into
    /// one line and exit 1: the shared frame of the one-shot commands.
    func withMigratedStore(doing what: String, _ body: @escaping @Sendable (OpenedStore, Logger) async throws -> Void) async throws {
        let url = try url()
        var logger = Logger(label: "syncapi")
        logger.logLevel = .warning
        do {
            let opened = try OpenedStore.open(url, pooler: pooler, timers: TimerWheel(resolution: .milliseconds(10)), logger: logger)
            let quiet = logger
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await opened.runClient() }
                defer { group.cancelAll() }
                try await opened.roles.evolution.migrate()
                try await body(opened, quiet)
            }
        } catch let error as SyncError where error.code == .unavailable {
            fail("cannot reach the database \(url)")
        } catch let error as DatabaseURLError {
            fail(error.description)
        } catch {
            fail("\(what) of \(url) failed: \(error)")
        }
    }
}

/// `syncapi restore-epoch`: run once after restoring a backup, before serving. A restored database has gone back in
/// time, so its change counters may hand out again versions that clients already hold; a new database id makes
/// every date of sync issued before the restore answer `sync: false` (a full, exact resync) instead of silently
/// skipping the changes lost with the restore.
struct RestoreEpoch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore-epoch", abstract: "Give a restored database a new id, so that every client resyncs in full, then exit.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let url = try database.url()
        try await database.withMigratedStore(doing: "restore-epoch") { opened, _ in
            let id = try await opened.roles.evolution.rotateDatabaseID()
            print("syncapi: \(url) has the new database id \(id); dates of sync issued before now answer sync: false")
        }
    }
}
