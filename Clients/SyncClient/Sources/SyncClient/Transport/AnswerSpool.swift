import Foundation

/// A sync's answer, downloaded whole to a file beside the replica before it is applied, then read back piece by piece
/// by the replica's write transaction. The writer is held for the apply's own time, never for the network's: a
/// `save()` made while a long first sync downloads over a slow link goes through at once, and readers still see the
/// replica before the sync or after it, never in between (the apply is one transaction). The file is not the
/// answer's copy in memory: a list of any length takes the same memory.
final class AnswerSpool: @unchecked Sendable {
    let path: String
    // Read by the write transaction's thread only; `cancelled` is set from any.
    private let handle: FileHandle
    private let cancelled = Locked(false)

    /// A new file for an answer, in the replica's `.answers` folder (each sync its own: an app and its extensions may
    /// share a replica).
    static func newPath(replicaPath: String) -> String {
        let folder = replicaPath + ".answers"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder + "/" + UUID().uuidString
    }

    /// Removes the answers a process left when it stopped while it downloaded or applied them (a day old: a sync of
    /// another process sharing the replica may be using a newer one).
    static func removeLeftovers(replicaPath: String, olderThan age: TimeInterval = 86_400) {
        let folder = replicaPath + ".answers"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = folder + "/" + name
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
            if let modified, modified < Date(timeIntervalSinceNow: -age) { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// Downloads `body` into `path` (created for the owner only, with the replica's file protection); throws the
    /// download's failure (as `offline`), `answer_too_large` past `limit` bytes, or `CancellationError`, and then
    /// leaves no file.
    static func download(
        _ body: AsyncThrowingStream<Data, any Error>, to path: String, limit: Int, protection: ReplicaFileProtection?
    ) async throws -> AnswerSpool {
        do {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw SyncClientError.local("cannot create \(path)")
            }
            try protection?.apply(to: [path])
            let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? writer.close() }
            var size = 0
            do {
                for try await piece in body {
                    try Task.checkCancellation()
                    size += piece.count
                    guard size <= limit else { throw SyncClientError.answerTooLarge(status: 200, limit: limit, what: "the sync's answer") }
                    try writer.write(contentsOf: piece)
                }
            } catch let error as SyncClientError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw Task.isCancelled ? CancellationError() : SyncClientError.offline("the answer stopped midway: \(error.localizedDescription)")
            }
            // A cancelled download ends its iteration without an error: the answer is not whole.
            try Task.checkCancellation()
            return try AnswerSpool(path: path)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    private init(path: String) throws {
        self.path = path
        handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The next piece of the answer; nil at its end; `CancellationError` once `cancel` was called.
    func next() throws -> Data? {
        if cancelled.withLock({ $0 }) { throw CancellationError() }
        guard let piece = try handle.read(upToCount: 256 * 1024), !piece.isEmpty else { return nil }
        return piece
    }

    /// Stops the apply reading it: its next `next` throws, and the transaction rolls back.
    func cancel() {
        cancelled.withLock { $0 = true }
    }
}
