import Foundation

/// Where the SDK's tests write their replicas: one folder per test process, removed when the process exits, so that
/// runs do not pile replicas up in the temporary directory (about 25 MB over a day's runs before). A run that
/// crashes leaves its folder for a look.
enum Scratch {
    /// This process's folder, created on first use.
    static let folder: String = {
        let folder = NSTemporaryDirectory() + "syncclient-test-run-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: Scratch.folder) }
        return folder
    }()

    /// A fresh path in this process's folder: `name`, a unique part, then `suffix`.
    static func path(_ name: String, suffix: String = ".sqlite") -> String {
        "\(folder)/\(name)\(UUID().uuidString)\(suffix)"
    }
}
