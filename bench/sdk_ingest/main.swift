// The SDK side of bench/sdk_ingest.py: a first sync of a big family through SyncClient, timed, with the process's
// peak RSS. Built in release from a temporary package that depends on Clients/SyncClient by path (the script writes
// it); not part of any target of the repository.
//
//   sdk-ingest SERVER_URL TOKEN ACCOUNT_ID FAMILY_ID REPLICA_PATH
//
// Prints one JSON line: syncSeconds, rows, rowsPerSecond, peakRSSAfterSyncMiB, readSeconds, peakRSSAfterReadMiB
// (the read: `all(Contact.self)`, or `items(.contacts)` with SDK_INGEST_NO_READ=1), then applyMedianMs and applyMaxMs:
// SDK_INGEST_APPLY times (default 9) one contact is changed on the server (a plain PUT) and the next `sync()` timed,
// the whole round trip of one remote change into the full replica (request, answer, apply, commit); then idleMedianMs:
// as many syncs with nothing changed. From the SDK's log ("sync answer applied"): the first sync's download and apply
// (firstDownloadSeconds, firstApplySeconds, and firstStagedSeconds from an SDK that stages the answer while it
// downloads: from the download's start to the end of the staging, which the apply waits for), and the median apply of one remote change (applyOnlyMedianMs: the
// replica's write transaction alone, without the round trip).
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Logging
import SyncClient
import Synchronization

/// The download and apply times of each sync, from the SDK's debug log line "sync answer applied" (and, from an SDK that
/// stages the answer while it downloads, when the staging ended: `stagedMs`, from the download's start).
final class PhaseLog: Sendable {
    let phases = Mutex<[(downloadMs: Double, applyMs: Double, stagedMs: Double?)]>([])

    struct Handler: LogHandler {
        let log: PhaseLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            guard event.message.description == "sync answer applied",
                let download = event.metadata?["downloadMs"].flatMap({ Double("\($0)") }),
                let apply = event.metadata?["applyMs"].flatMap({ Double("\($0)") })
            else { return }
            let staged = event.metadata?["stagedMs"].flatMap { Double("\($0)") }
            log.phases.withLock { $0.append((download, apply, staged)) }
        }
    }
}

/// The seed's session handed to the client as is (no login: the raw download uses the same token).
struct FixedTokenStore: TokenStore {
    let session: ClientSession
    func load() throws -> ClientSession? { session }
    func save(_ session: ClientSession) throws {}
    func clear() throws {}
}

/// A /proc/self/status field in MiB (VmHWM: peak RSS; VmRSS: now).
func status(_ field: String) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kib = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        return kib / 1024
    }
    return 0
}

let arguments = CommandLine.arguments
guard arguments.count == 6 else {
    FileHandle.standardError.write(Data("usage: sdk-ingest SERVER_URL TOKEN ACCOUNT_ID FAMILY_ID REPLICA_PATH\n".utf8))
    exit(2)
}
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: arguments[5] + suffix) }
var configuration = SyncClientConfiguration(serverURL: URL(string: arguments[1])!, replicaPath: arguments[5])
configuration.tokenStore = FixedTokenStore(
    session: ClientSession(token: arguments[2], accountID: arguments[3], familyID: arguments[4]))
configuration.pushDelay = nil
let phaseLog = PhaseLog()
configuration.makeLogger = { label in Logger(label: label) { _ in PhaseLog.Handler(log: phaseLog) } }
let client = try SyncClient(configuration: configuration)
let rssBefore = status("VmRSS")

let start = ContinuousClock.now
do {
    try await client.sync()
} catch {
    FileHandle.standardError.write(Data("sdk-ingest: the sync failed: \(error)\n".utf8))
    exit(1)
}
let syncTime = ContinuousClock.now - start
let peakAfterSync = status("VmHWM")
let firstPhases = phaseLog.phases.withLock { $0.last }

// SDK_INGEST_NO_READ=1: the sync only (the read of 100,000 typed models takes far longer than the sync), the rows
// counted by `items(.contacts)`; SDK_INGEST_NO_READ=count: not even that, the count is the status's (the replica's kept
// count of the list).
let noRead = ProcessInfo.processInfo.environment["SDK_INGEST_NO_READ"]
let readStart = ContinuousClock.now
let count =
    switch noRead {
    case nil: try client.all(Contact.self).count
    case "count": client.status.lists["contacts"]?.count ?? 0
    default: try client.items(.contacts).count
    }
let readTime = ContinuousClock.now - readStart
let peakAfterRead = status("VmHWM")

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

// One remote change at a time into the full replica: a PUT of one contact by another client, then a timed sync.
let applyRounds = Int(ProcessInfo.processInfo.environment["SDK_INGEST_APPLY"] ?? "") ?? 9
var applyTimes: [Double] = []
var applyOnlyTimes: [Double] = []
for round in 0..<applyRounds {
    var request = URLRequest(url: URL(string: arguments[1])!.appendingPathComponent("api/v1/contacts/apply\(round)"))
    request.httpMethod = "PUT"
    request.setValue("Bearer \(arguments[2])", forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = Data(#"{"firstName":"Apply\#(round)","lastName":"Remote"}"#.utf8)
    let (_, answer) = try await URLSession.shared.data(for: request)
    guard (answer as? HTTPURLResponse).map({ (200..<300).contains($0.statusCode) }) == true else {
        FileHandle.standardError.write(Data("sdk-ingest: the remote change was refused: \(answer)\n".utf8))
        exit(1)
    }
    let applyStart = ContinuousClock.now
    try await client.sync()
    applyTimes.append(seconds(ContinuousClock.now - applyStart) * 1000)
    applyOnlyTimes.append(phaseLog.phases.withLock { $0.last?.applyMs } ?? 0)
}
// The same number of syncs with nothing changed: what a sync costs whatever it applies (the round trip, the server's
// group, the status), so that the difference is what applying one change costs.
var idleTimes: [Double] = []
for _ in 0..<applyRounds {
    let idleStart = ContinuousClock.now
    try await client.sync()
    idleTimes.append(seconds(ContinuousClock.now - idleStart) * 1000)
}
applyTimes.sort()
applyOnlyTimes.sort()
idleTimes.sort()
let report: [String: Double] = [
    "syncSeconds": seconds(syncTime), "rows": Double(count), "rowsPerSecond": Double(count) / seconds(syncTime),
    "rssBeforeSyncMiB": rssBefore, "peakRSSAfterSyncMiB": peakAfterSync, "readSeconds": seconds(readTime),
    "peakRSSAfterReadMiB": peakAfterRead,
    "applyMedianMs": applyTimes.isEmpty ? 0 : applyTimes[applyTimes.count / 2], "applyMaxMs": applyTimes.last ?? 0,
    "idleMedianMs": idleTimes.isEmpty ? 0 : idleTimes[idleTimes.count / 2],
    "applyOnlyMedianMs": applyOnlyTimes.isEmpty ? 0 : applyOnlyTimes[applyOnlyTimes.count / 2],
    "applyOnlyMaxMs": applyOnlyTimes.last ?? 0,
    "firstDownloadSeconds": (firstPhases?.downloadMs ?? 0) / 1000, "firstApplySeconds": (firstPhases?.applyMs ?? 0) / 1000,
    "firstStagedSeconds": (firstPhases?.stagedMs ?? firstPhases?.downloadMs ?? 0) / 1000,
]
let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
