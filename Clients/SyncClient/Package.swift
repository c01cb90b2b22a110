// swift-tools-version:6.1
import PackageDescription

/// Strict settings for every target (the server package's conventions).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The Swift client SDK of SyncAPI: an exact offline replica of a family's data for apps, and the command line built
/// on it. It depends on GRDB, swift-log and Foundation only, so an app never resolves a server package.
let package = Package(
    name: "SyncClient",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .library(name: "SyncClient", targets: ["SyncClient"]),
        .library(name: "SyncClientCommands", targets: ["SyncClientCommands"]),
        // For an app's unit tests: an in-memory server to plug in as the client's transport, scripted.
        .library(name: "SyncClientTesting", targets: ["SyncClientTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // The SDK's logs (`SyncClientLog`): the app picks where they go (`LoggingSystem.bootstrap`).
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // `swift package generate-documentation --target SyncClient` (CI: no warnings). Plugins are never resolved
        // for an app that installs the SDK from the root package.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "SyncClient",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SyncClientTesting",
            dependencies: ["SyncClient"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SyncClientCommands",
            dependencies: ["SyncClient"],
            swiftSettings: swiftSettings
        ),
        // The adapter the conformance suite drives (Clients/conformance): JSON commands on standard input.
        .executableTarget(
            name: "SyncClientConformance",
            dependencies: ["SyncClient", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncClientTests",
            dependencies: [
                "SyncClient", "SyncClientCommands", "SyncClientTesting", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
