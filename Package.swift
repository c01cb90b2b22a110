// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The server's packages are used under the default trait `Server` only: an app that installs the SDK with
/// `traits: []` resolves none of them (SwiftPM resolves every dependency a package's enabled traits may use).
let server: TargetDependencyCondition? = .when(traits: ["Server"])

let package = Package(
    name: "syncapi",
    // iOS for the SDK's product only (the server's targets are never built for it).
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "syncapi", targets: ["SyncAPICommands"]),
        // The Swift SDK, for apps: `.package(url: "https://github.com/…/syncapi.git", branch: "main", traits: [])` and
        // `.product(name: "SyncClient", package: "syncapi")`. It builds from GRDB, swift-log and Foundation alone:
        // SwiftPM resolves only the packages of the products an app uses (the server's are never fetched for it).
        .library(name: "SyncClient", targets: ["SyncClient"]),
        // For an app's unit tests: `.product(name: "SyncClientTesting", package: "syncapi")` in its test target.
        .library(name: "SyncClientTesting", targets: ["SyncClientTesting"]),
    ],
    traits: [
        .trait(name: "Server", description: "The server, its command line and its tests (on by default)."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // Sign-in with identity providers (protocol §14): ID tokens verified by a maintained JWT library, key sets
        // fetched over HTTPS.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The SDK's sources live in Clients/SyncClient, which is also a package of its own (built and tested alone in
        // CI, with its unit tests); here they are targets of the root package so that an app can install the SDK by
        // this repository's URL (SwiftPM cannot depend on a package in a sub-folder).
        .target(
            name: "SyncClient",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")],
            path: "Clients/SyncClient/Sources/SyncClient",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SyncClientTesting",
            dependencies: ["SyncClient"],
            path: "Clients/SyncClient/Sources/SyncClientTesting",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SyncClientCommands",
            dependencies: ["SyncClient"],
            path: "Clients/SyncClient/Sources/SyncClientCommands",
            swiftSettings: swiftSettings
        ),
        // The layers, as modules: `SyncAPI` (the model, JSON, the engine and the storage protocols; no database
        // driver), one target per backend that speaks its SQL, `SyncStorage` that opens the one a URL names,
        // `SyncModelTools` (code generation), `Handlers` (HTTP) and the `syncapi` command line.
        .target(
            name: "SyncAPI",
            dependencies: [
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
                .product(name: "JWTKit", package: "jwt-kit", condition: server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL store: its statements, migrations, snapshots, standbys and `LISTEN` connection.
        .target(
            name: "SyncPostgres",
            dependencies: [
                "SyncAPI",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        // The embedded SQLite store (the default): its statements, migrations, snapshots and connection threads.
        .target(
            name: "SyncSQLite",
            dependencies: [
                "SyncAPI",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        // Opens the store a database URL names, with the services it needs.
        .target(
            name: "SyncStorage",
            dependencies: [
                "SyncAPI", "SyncPostgres", "SyncSQLite",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        // Code generation from a data model: its OpenAPI document and its Swift types (the SDK's). The server serves
        // the OpenAPI document; nothing in the core depends on generation.
        .target(
            name: "SyncModelTools",
            dependencies: ["SyncAPI"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Handlers",
            dependencies: [
                "SyncAPI",
                "SyncStorage",
                "SyncModelTools",
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "HummingbirdTLS", package: "hummingbird", condition: server),
                .product(name: "HummingbirdHTTP2", package: "hummingbird", condition: server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: server),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "CompressNIO", package: "compress-nio", condition: server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        // The `syncapi` command line (serve, migrate, model, client): its module is named apart from `SyncAPI`, since the
        // two names differ only in case (one file system of two on developers' machines does not tell them apart).
        .executableTarget(
            name: "SyncAPICommands",
            dependencies: [
                "Handlers",
                "SyncAPI",
                "SyncStorage",
                "SyncModelTools",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                "SyncClientCommands",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "SyncAPI", "SyncStorage", "SyncPostgres", "SyncSQLite",
                .product(name: "Logging", package: "swift-log", condition: server),
                // `TestIdentityProvider` mints its own keys and ID tokens.
                .product(name: "Crypto", package: "swift-crypto", condition: server),
                .product(name: "CryptoExtras", package: "swift-crypto", condition: server),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncAPITests",
            dependencies: [
                "SyncAPI", "SyncPostgres", "SyncSQLite", "SyncStorage", "SyncModelTools", "TestSupport",
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "NIOPosix", package: "swift-nio", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HandlersTests",
            dependencies: [
                "Handlers",
                "SyncAPI", "SyncStorage", "SyncPostgres",
                "TestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "Crypto", package: "swift-crypto", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ClientTests",
            dependencies: [
                "Handlers",
                "SyncAPI", "SyncStorage", "SyncPostgres",
                "TestSupport",
                "SyncClient",
                "SyncClientCommands",
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: server),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
                .product(name: "NIOCore", package: "swift-nio", condition: server),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird", condition: server),
                .product(name: "Logging", package: "swift-log", condition: server),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
