import Foundation

/// Where the tests of one run write their files (databases, server logs, a process test's PostgreSQL): one folder per
/// test process. Its first use removes the folders of earlier test processes that have ended, so nothing piles up
/// run after run (a full run used to leave about 600 MB in the temporary directory), while a failed run's files
/// stay for a look until the next run.
public enum TestScratch {
    static let prefix = "syncapi-test-run-"

    /// This process's folder, created (and earlier runs' swept) on first use.
    public static let folder: String = {
        let temporary = NSTemporaryDirectory()
        let own = getpid()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != own else { continue }
            // Signal 0 only asks whether the process exists.
            if kill(pid, 0) == -1 && errno == ESRCH { try? FileManager.default.removeItem(atPath: temporary + name) }
        }
        let folder = temporary + prefix + "\(own)"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// A fresh path in this run's folder: `name`, a unique part, then `suffix` (for instance `db-` and `.sqlite`).
    public static func path(_ name: String, suffix: String = "") -> String {
        "\(folder)/\(name)\(UUID().uuidString)\(suffix)"
    }
}
