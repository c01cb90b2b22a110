import Foundation
import Logging
import SyncAPI
@_spi(StoreTesting) import SyncStorage

/// The two storage backends every store and contract test runs on.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// A URL naming a fresh, empty database of this backend (on PostgreSQL, with `logStatements`, one that logs every
    /// statement it runs).
    public func freshDatabaseURL(logStatements: Bool = false) async throws -> DatabaseURL {
        switch self {
        case .sqlite:
            // A folder of its own: SQLite keeps media in `media/` beside the database, and a purge removes old
            // unfinished uploads there (a test's purge with a clock hours ahead removed another test's upload in flight
            // when the databases shared a folder).
            let folder = TestScratch.path("db-")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return .sqlite(path: folder + "/syncapi.sqlite")
        case .postgres:
            return try DatabaseURL(parsing: try await TestPostgres.shared.newDatabaseURL(logStatements: logStatements))
        }
    }

    /// Runs `body` with a migrated store on a fresh database (its client running meanwhile).
    public func withStore<T: Sendable>(
        logStatements: Bool = false, _ body: @Sendable (any SyncStore) async throws -> T
    ) async throws -> T {
        try await Self.withStore(at: try await freshDatabaseURL(logStatements: logStatements), body)
    }

    /// Runs `body` with a migrated store on the database at `url` (its client running meanwhile).
    public static func withStore<T: Sendable>(at url: DatabaseURL, _ body: @Sendable (any SyncStore) async throws -> T) async throws -> T {
        let opened = try OpenedStore.open(url, deadline: testDeadline, timers: testTimers, logger: Logger(label: "test"))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await opened.runClient() }
            defer { group.cancelAll() }
            try await opened.roles.evolution.migrate()
            return try await body(opened.store)
        }
    }
}

/// The database deadline and request time limit of test stores and servers, unless a test is about them: a loaded
/// machine makes a seeding or a many-row read take longer than production's 10 s without anything being wrong, and
/// a test must not fail for that.
public let testDeadline: Duration = .seconds(120)

/// The timers of the stores and deadlines that tests build without an application (an application has its own).
public let testTimers = TimerWheel(resolution: .milliseconds(10))

/// bcrypt cost in tests: the minimum, so signups stay fast (real bcrypt all the same).
public let testBcryptCost: UInt8 = 4
