// swift-tools-version:6.0
// The stack's floor (issue 19): Hummingbird and PostgresNIO answering one prepared statement and nothing else, so that
// bench/harness.py (--floor) can say how much of pgbench's rate this stack leaves to any server on the same machine;
// and the same statement through libpq (pgbench's client library), to say what another driver would leave.
// Built apart from the server (bench/floor/build), never by CI's tests.
import PackageDescription

let package = Package(
    name: "syncapi-floor",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        // libpq (Debian: libpq-dev), for the route that runs the same statement through pgbench's client library.
        .systemLibrary(name: "CLibPQ"),
        .executableTarget(
            name: "syncapi-floor",
            dependencies: [
                "CLibPQ",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
