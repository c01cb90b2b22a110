import Foundation

/// A sync's answer as it downloads, in a file beside the replica: the download appends each piece to it, and the
/// staging of the answer (`SyncClient.stage`, on a thread of its own) reads it back at the same time, waiting for the
/// bytes not yet arrived. The file is the buffer between the two, so neither waits for the other and a list of any
/// length takes the same memory, whichever of the network and the staging is faster. The replica is not touched
/// until the whole answer arrived and was staged: its writer is held for the final apply alone.
final class AnswerSpool: @unchecked Sendable {
    let path: String
    private let writer: FileHandle
    // Read by the staging's thread only.
    private let reader: FileHandle
    private var readOffset = 0
    /// Guards the state below, and wakes the reader.
    private let condition = NSCondition()
    private var written = 0
    private var state = State.downloading
    /// The offset the waiting reader needs written before it reads again (nil: not waiting).
    private var waitingFor: Int?

    private enum State {
        case downloading
        /// The whole answer is in the file.
        case complete
        /// The download failed or was cancelled: the reader throws `Stopped`.
        case stopped
        /// The reader gave up (the answer is malformed, or a sub-answer ended the session): the download stops.
        case abandoned
    }

    /// What the reader throws once the download failed or was cancelled (the download throws the reason).
    struct Stopped: Error {}

    /// What the download throws once the reader gave up (the reader throws the reason).
    struct Abandoned: Error {}

    /// Bytes the reader waits for before it reads again (unless the answer ends sooner): it wakes once per 64 KiB,
    /// not once per piece of the network (a first sync's answer comes in tens of thousands of small pieces).
    private static let readAhead = 64 * 1024

    /// A new file for an answer, in the replica's `.answers` folder (each sync its own: an app and its extensions may
    /// share a replica).
    static func newPath(replicaPath: String) -> String {
        let folder = replicaPath + ".answers"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder + "/" + UUID().uuidString
    }

    /// Removes the answers (and their staging databases) a process left when it stopped while it downloaded or applied
    /// them (a day old: a sync of another process sharing the replica may be using a newer one).
    static func removeLeftovers(replicaPath: String, olderThan age: TimeInterval = 86_400) {
        let folder = replicaPath + ".answers"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = folder + "/" + name
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
            if let modified, modified < Date(timeIntervalSinceNow: -age) { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// An empty answer file at `path`, created for the owner only, with the replica's file protection.
    init(path: String, protection: ReplicaFileProtection?) throws {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw SyncClientError.local("cannot create \(path)")
        }
        do {
            try protection?.apply(to: [path])
            writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            do {
                reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            } catch {
                try? writer.close()
                throw error
            }
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    deinit {
        try? writer.close()
        try? reader.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Downloads `body` into the file, the reader following, calling `progress` with the bytes received after each
    /// piece; throws the download's failure (as `offline`), `answer_too_large` past `limit` bytes,
    /// `CancellationError`, or `Abandoned` once the reader gave up. However it ends, the reader is told: it reads to the
    /// end of a whole answer, or throws `Stopped`.
    func download(_ body: AsyncThrowingStream<Data, any Error>, limit: Int, progress: (Int) -> Void = { _ in }) async throws {
        var outcome = State.stopped
        defer { end(outcome) }
        var size = 0
        do {
            for try await piece in body {
                try Task.checkCancellation()
                size += piece.count
                guard size <= limit else { throw SyncClientError.answerTooLarge(status: 200, limit: limit, what: "the sync's answer") }
                try append(piece)
                progress(size)
            }
        } catch let error as SyncClientError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as Abandoned {
            throw error
        } catch {
            throw Task.isCancelled ? CancellationError() : SyncClientError.offline("the answer stopped midway: \(error.localizedDescription)")
        }
        // A cancelled download ends its iteration without an error: the answer is not whole.
        try Task.checkCancellation()
        outcome = .complete
    }

    /// Writes a piece and wakes the reader once it has enough to read.
    private func append(_ piece: Data) throws {
        if condition.withLock({ state == .abandoned }) { throw Abandoned() }
        try writer.write(contentsOf: piece)
        condition.withLock {
            written += piece.count
            if let waitingFor, written >= waitingFor { condition.signal() }
        }
    }

    /// The download's end: the reader reads what is left, or throws `Stopped`.
    private func end(_ outcome: State) {
        condition.withLock {
            if state == .downloading { state = outcome }
            condition.signal()
        }
    }

    /// The next piece of the answer, waiting for it while it downloads; nil at the end of a whole answer. Throws
    /// `Stopped` once the download failed or was cancelled.
    func next() throws -> Data? {
        let available = condition.withLock { () -> Int? in
            defer { waitingFor = nil }
            waitingFor = readOffset + Self.readAhead
            while state == .downloading, written < waitingFor! { condition.wait() }
            return state == .stopped || state == .abandoned ? nil : written - readOffset
        }
        guard let available else { throw Stopped() }
        guard available > 0 else { return nil }
        guard let piece = try reader.read(upToCount: min(available, 256 * 1024)), !piece.isEmpty else {
            throw SyncClientError.local("the answer's file \(path) is shorter than its download")
        }
        readOffset += piece.count
        return piece
    }

    /// The reader gives up: the download stops at its next piece (and throws `Abandoned`).
    func abandon() {
        condition.withLock {
            if state == .downloading { state = .abandoned }
        }
    }
}
