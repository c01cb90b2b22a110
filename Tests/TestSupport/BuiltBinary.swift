import Foundation

/// The `syncapi` executable that `swift build` put beside the test bundle, for tests that run it as its own process.
public enum BuiltBinary {
    public static func path() throws -> String {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [folder, folder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("syncapi").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestPostgresError(message: "no syncapi binary beside \(CommandLine.arguments[0]): run swift build first")
    }
}
