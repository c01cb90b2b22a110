import Foundation
import GRDB
import NIOCore
import NIOPosix
import SyncAPI
import Synchronization

/// Media on the embedded default: files under `media/` beside the database, described by the `media` table.
///
/// An upload goes to `media/tmp/<uuid>` and is renamed to `media/<family>/<sha256>` when complete, inside the write
/// transaction that records it, so a crash never leaves a half file under a final name, and a purge (also a write
/// transaction) never races a commit.
extension SQLiteStore: MediaStore {
    public func beginUpload(spaceID: String) async throws -> any MediaUpload {
        try FileMediaUpload(store: self, spaceID: spaceID)
    }

    public func media(spaceID: String, sha256: String) async throws -> MediaInfo? {
        try await read { db in
            try Row.fetchOne(
                cached: db, sql: "SELECT content_type, size FROM media WHERE family_id = ? AND sha256 = ?", arguments: [spaceID, sha256]
            ).map { MediaInfo(sha256: sha256, contentType: $0[0], size: $0[1]) }
        }
    }

    func mediaPath(spaceID: String, sha256: String) -> String { "\(mediaFolder)/\(spaceID)/\(sha256)" }

    public func readMedia(
        spaceID: String, sha256: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void
    ) async throws {
        let fd = open(mediaPath(spaceID: spaceID, sha256: sha256), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SyncError.notFound("No such media.") }
        defer { close(fd) }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = Int(min(range.upperBound - offset, Int64(Self.mediaPiece)))
            let at = offset
            // Read straight into the buffer that goes to the socket: one allocation a piece, no copies.
            let piece = try await NIOThreadPool.singleton.runIfActive {
                var buffer = ByteBufferAllocator().buffer(capacity: count)
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                    max(0, pread(fd, pointer.baseAddress, count, off_t(at)))
                }
                guard read > 0 else { throw SyncError.unavailable }
                return buffer
            }
            offset += Int64(piece.readableBytes)
            try await body(piece)
        }
    }

    /// Bytes read or written at a time.
    static let mediaPiece = 64 * 1024

    public func mediaBytes(spaceID: String) async throws -> Int64 {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT COALESCE(sum(size), 0) FROM media WHERE family_id = ?", arguments: [spaceID]) ?? 0
        }
    }

    /// Never holds the single writer for long: which media are named is read from a snapshot, one family at a time, and
    /// the rows go in short write transactions of at most `mediaPurgeBatch`. A medium an item wrote since that read was
    /// marked by the write (`touchMedia`), so the delete's `referenced_ms < cutoff` skips it. A deleted medium's file
    /// is renamed aside inside the transaction (a new upload of the same bytes then writes a new file) and unlinked
    /// after the commit, or put back if the commit fails.
    public func purgeMedia(cutoffMs: Int64, nowMs: Int64) async throws -> Int {
        let candidates = try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT family_id, sha256 FROM media WHERE referenced_ms < ? ORDER BY family_id", arguments: [cutoffMs]
            ).map { (family: $0[0] as String, sha256: $0[1] as String) }
        }
        var purged = 0
        for (family, media) in Dictionary(grouping: candidates, by: \.family) {
            let named = try await read { db in try Self.namedMedia(db, spaceID: family) }
            let unnamed = media.map(\.sha256).filter { !named.contains($0) }
            var start = 0
            while start < unnamed.count {
                let batch = Array(unnamed[start..<min(start + Self.mediaPurgeBatch, unnamed.count)])
                start += batch.count
                purged += try await deleteMedia(spaceID: family, batch, cutoffMs: cutoffMs)
            }
        }
        // Uploads a crash cut short: temporary files older than an hour.
        let tmp = mediaFolder + "/tmp"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] {
            let path = tmp + "/" + name
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                modified.timeIntervalSince1970 * 1000 < Double(nowMs - 3_600_000)
            {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        return purged
    }

    /// Media rows deleted per write transaction of the purge.
    static let mediaPurgeBatch = 100

    /// The media a live item of the family names now, in any collection (the write path marks media named anywhere).
    static func namedMedia(_ db: Database, spaceID: String) throws -> Set<String> {
        var named = Set<String>()
        let bodies = try String.fetchCursor(
            db, sql: "SELECT body FROM items WHERE family_id = ? AND NOT deleted AND instr(body, ?) > 0",
            arguments: [spaceID, MediaURL.prefix])
        while let body = try bodies.next() { named.formUnion(MediaURL.hashes(in: [body])) }
        return named
    }

    private func deleteMedia(spaceID: String, _ hashes: [String], cutoffMs: Int64) async throws -> Int {
        let folder = mediaFolder
        let moved = Mutex<[(final: String, aside: String)]>([])
        do {
            let count = try await write { db -> Int in
                var count = 0
                for sha in hashes {
                    guard
                        try Int64.fetchOne(
                            db, sql: "DELETE FROM media WHERE family_id = ? AND sha256 = ? AND referenced_ms < ? RETURNING 1",
                            arguments: [spaceID, sha, cutoffMs]) != nil
                    else { continue }
                    count += 1
                    let final = "\(folder)/\(spaceID)/\(sha)"
                    let aside = "\(folder)/tmp/purged-\(UUID().uuidString)"
                    if rename(final, aside) == 0 { moved.withLock { $0.append((final, aside)) } }
                }
                return count
            }
            for file in moved.withLock({ $0 }) { unlink(file.aside) }
            return count
        } catch {
            // Rolled back: the rows are there again, so are their files.
            for file in moved.withLock({ $0 }) { rename(file.aside, file.final) }
            throw error
        }
    }
}

/// An upload to a temporary file, written with `write(2)` on the blocking pool. Used by one task at a time.
final class FileMediaUpload: MediaUpload, Sendable {
    let store: SQLiteStore
    let spaceID: String
    let temporaryPath: String
    let fd: Int32
    private let closed = Atomic<Bool>(false)

    init(store: SQLiteStore, spaceID: String) throws {
        self.store = store
        self.spaceID = spaceID
        let tmp = store.mediaFolder + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        temporaryPath = tmp + "/" + UUID().uuidString
        fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SyncError.unavailable }
    }

    func write(_ bytes: ByteBuffer) async throws {
        let fd = self.fd
        // Written from the buffer as it came off the socket: no copy.
        let complete = try await NIOThreadPool.singleton.runIfActive {
            bytes.withUnsafeReadableBytes { pointer -> Bool in
                var done = 0
                while done < pointer.count {
                    let n = Glibc.write(fd, pointer.baseAddress! + done, pointer.count - done)
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else { return false }
                    done += n
                }
                return true
            }
        }
        guard complete else { throw SyncError.unavailable }
    }

    func commit(_ info: MediaInfo, nowMs: Int64, familyQuota: Int64) async throws -> Bool {
        let fd = self.fd
        let temporaryPath = self.temporaryPath
        let folder = store.mediaFolder + "/" + spaceID
        let final = store.mediaPath(spaceID: spaceID, sha256: info.sha256)
        let spaceID = self.spaceID
        // On disk before it is visible under its name.
        let synced = try await NIOThreadPool.singleton.runIfActive { fsync(fd) == 0 }
        closeOnce()
        guard synced else {
            try? FileManager.default.removeItem(atPath: temporaryPath)
            throw SyncError.unavailable
        }
        return try await store.write { db in
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let existed =
                try Int64.fetchOne(db, sql: "SELECT 1 FROM media WHERE family_id = ? AND sha256 = ?", arguments: [spaceID, info.sha256]) != nil
            if !existed {
                let used = try Int64.fetchOne(db, sql: "SELECT COALESCE(sum(size), 0) FROM media WHERE family_id = ?", arguments: [spaceID])
                try MediaService.checkQuota(used: used ?? 0, adding: info.size, quota: familyQuota)
            }
            try db.execute(
                sql: """
                    INSERT INTO media (family_id, sha256, content_type, size, created_ms, referenced_ms) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (family_id, sha256) DO UPDATE SET referenced_ms = max(referenced_ms, excluded.referenced_ms)
                    """, arguments: [spaceID, info.sha256, info.contentType, info.size, nowMs, nowMs])
            // Same name, same bytes: a file already there (this family's, or left by a crash before its row) stays.
            if FileManager.default.fileExists(atPath: final) {
                try? FileManager.default.removeItem(atPath: temporaryPath)
            } else {
                try FileManager.default.moveItem(atPath: temporaryPath, toPath: final)
                // The new name is on disk before the row that makes it visible commits.
                guard FileMediaUpload.syncDirectory(folder) else { throw SyncError.unavailable }
            }
            return !existed
        }
    }

    /// fsync(2) of a directory, so that a rename in it survives a crash.
    static func syncDirectory(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }

    /// Closes the file once: a descriptor closed twice could close another file that reused its number.
    private func closeOnce() {
        if !closed.exchange(true, ordering: .relaxed) { close(fd) }
    }

    func abort() async {
        closeOnce()
        try? FileManager.default.removeItem(atPath: temporaryPath)
    }
}
