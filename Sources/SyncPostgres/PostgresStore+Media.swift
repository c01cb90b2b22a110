import Foundation
import Logging
import NIOCore
import PostgresNIO
import SyncAPI
import Synchronization

/// Media inside PostgreSQL, so every instance serves every file: the bytes in 256 KiB rows of `media_chunks`
/// (never one giant value), described by `media`. Chunks become visible only when their `media` row commits.
extension PostgresStore: MediaStore {
    /// Bytes per stored chunk.
    static let mediaChunk = 256 * 1024

    public func beginUpload(spaceID: String) async throws -> any MediaUpload {
        PostgresMediaUpload(store: self, spaceID: spaceID, uploadID: DatabaseIdentity.uuid())
    }

    public func media(spaceID: String, sha256: String) async throws -> MediaInfo? {
        try await guarded { _ in
            try await client.statement(
                "SELECT content_type, size FROM media WHERE family_id = \(spaceID) AND sha256 = \(sha256)", logger: logger
            ) { rows in
                for try await (type, size) in rows.decode((String, Int64).self) { return MediaInfo(sha256: sha256, contentType: type, size: size) }
                return nil
            }
        }
    }

    public func readMedia(
        spaceID: String, sha256: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void
    ) async throws {
        guard !range.isEmpty else { return }
        let chunk = Int64(Self.mediaChunk)
        let first = range.lowerBound / chunk
        let last = (range.upperBound - 1) / chunk
        // A piece at a time: each query reads at most a few chunks, so memory stays flat whatever the size.
        var next = first
        while next <= last {
            let n = next
            let upTo = min(last, n + 3)
            let rows: [(Int32, ByteBuffer)] = try await guarded { _ in
                try await client.statement(
                    """
                    SELECT c.n, c.data FROM media m JOIN media_chunks c ON c.upload_id = m.upload_id
                    WHERE m.family_id = \(spaceID) AND m.sha256 = \(sha256) AND c.n BETWEEN \(Int32(n)) AND \(Int32(upTo))
                    ORDER BY c.n
                    """, logger: logger
                ) { rows in
                    var out: [(Int32, ByteBuffer)] = []
                    for try await row in rows.decode((Int32, ByteBuffer).self) { out.append(row) }
                    return out
                }
            }
            guard rows.count == Int(upTo - n + 1) else { throw SyncError.notFound("No such media.") }
            for (index, data) in rows {
                let start = Int64(index) * chunk
                var piece = data
                let skip = Int(max(0, range.lowerBound - start))
                let keep = Int(min(Int64(data.readableBytes), range.upperBound - start)) - skip
                piece.moveReaderIndex(forwardBy: skip)
                try await body(piece.getSlice(at: piece.readerIndex, length: keep) ?? ByteBuffer())
            }
            next = upTo + 1
        }
    }

    public func mediaBytes(spaceID: String) async throws -> Int64 {
        try await guarded { _ in
            try await client.statement("SELECT COALESCE(sum(size), 0)::BIGINT FROM media WHERE family_id = \(spaceID)", logger: logger) { rows in
                for try await bytes in rows.decode(Int64.self) { return bytes }
                return 0
            }
        }
    }

    /// Per family: which media a live item names now (any collection: the write path marks media named anywhere) is
    /// read first, without a lock; then, in one transaction that locks the family row as every item write does, media
    /// named last before the cutoff and not named in that read go. An item write naming a file since that read marked
    /// it (`touchMedia`, under the same lock), so the delete's cutoff skips it; a write after the purge finds the file
    /// already gone: never a file deleted under an item that names it.
    public func purgeMedia(cutoffMs: Int64, nowMs: Int64) async throws -> Int {
        try await guarded(within: .seconds(3600)) { budget in
            let families = try await client.statement(
                "SELECT DISTINCT family_id FROM media WHERE referenced_ms < \(cutoffMs) ORDER BY family_id", logger: logger
            ) { rows in
                var families: [String] = []
                for try await id in rows.decode(String.self) { families.append(id) }
                return families
            }
            var purged = 0
            for family in families {
                let named = try await client.statement(
                    "SELECT body FROM items WHERE family_id = \(family) AND NOT deleted AND strpos(body, \(MediaURL.prefix)) > 0",
                    logger: logger
                ) { rows in
                    var named = Set<String>()
                    for try await body in rows.decode(String.self) { named.formUnion(MediaURL.hashes(in: [body])) }
                    return named
                }
                let keep = Array(named)
                purged += try await transaction(under: budget) { conn in
                    try await conn.statement("SELECT 1 FROM families WHERE id = \(family) FOR UPDATE", logger: logger)
                    var count = 0
                    for try await n in try await conn.statement(
                        """
                        WITH gone AS (
                          DELETE FROM media WHERE family_id = \(family) AND referenced_ms < \(cutoffMs)
                          AND NOT (sha256 = ANY(\(keep)::text[])) RETURNING upload_id),
                             bytes AS (DELETE FROM media_chunks WHERE upload_id IN (SELECT upload_id FROM gone))
                        SELECT count(*) FROM gone
                        """, logger: logger
                    ).decode(Int64.self) { count = Int(n) }
                    return count
                }
            }
            // Uploads a crash or a refusal cut short: chunks no media row names, of an upload that wrote nothing for
            // an hour (a slow upload still writing keeps all its chunks; `commit` checks they are all there).
            try await client.statement(
                """
                DELETE FROM media_chunks c WHERE c.upload_id IN (
                  SELECT upload_id FROM media_chunks GROUP BY upload_id HAVING max(created_ms) < \(nowMs - 3_600_000))
                AND NOT EXISTS (SELECT 1 FROM media m WHERE m.upload_id = c.upload_id)
                """, logger: logger)
            return purged
        }
    }
}

/// An upload into `media_chunks`: bytes gather to a chunk, each full chunk is one INSERT. Used by one task at a time.
final class PostgresMediaUpload: MediaUpload, Sendable {
    let store: PostgresStore
    let spaceID: String
    let uploadID: String
    private let state = Mutex<(pending: ByteBuffer, next: Int32)>((ByteBuffer(), 0))

    init(store: PostgresStore, spaceID: String, uploadID: String) {
        self.store = store
        self.spaceID = spaceID
        self.uploadID = uploadID
    }

    func write(_ bytes: ByteBuffer) async throws {
        var bytes = bytes
        while bytes.readableBytes > 0 {
            let full: (ByteBuffer, Int32)? = state.withLock { state in
                let take = min(bytes.readableBytes, PostgresStore.mediaChunk - state.pending.readableBytes)
                var slice = bytes.readSlice(length: take)!
                state.pending.writeBuffer(&slice)
                guard state.pending.readableBytes == PostgresStore.mediaChunk else { return nil }
                defer {
                    state.pending = ByteBuffer()
                    state.next += 1
                }
                return (state.pending, state.next)
            }
            if let (chunk, n) = full { try await insert(chunk, n) }
        }
    }

    private func insert(_ chunk: ByteBuffer, _ n: Int32) async throws {
        let uploadID = self.uploadID
        let now = WallClock.nowMs()
        try await store.guarded { _ in
            try await self.store.client.statement(
                "INSERT INTO media_chunks (upload_id, n, data, created_ms) VALUES (\(uploadID), \(n), \(chunk), \(now))",
                logger: self.store.logger)
        }
    }

    func commit(_ info: MediaInfo, nowMs: Int64, familyQuota: Int64) async throws -> Bool {
        let last = state.withLock { state -> (ByteBuffer, Int32)? in
            guard state.pending.readableBytes > 0 else { return nil }
            defer { state.pending = ByteBuffer() }
            return (state.pending, state.next)
        }
        if let (chunk, n) = last { try await insert(chunk, n) }
        let (spaceID, uploadID) = (self.spaceID, self.uploadID)
        let store = self.store
        let expected = Int64((Int(info.size) + PostgresStore.mediaChunk - 1) / PostgresStore.mediaChunk)
        return try await store.guarded { budget in
            try await store.transaction(under: budget) { conn in
                // Every chunk must be there: never a stored file with a hole (the purge sweeps the chunks of an upload
                // idle for an hour; an upload that slow starts over).
                var chunks: Int64 = -1
                for try await n in try await conn.statement(
                    "SELECT count(*) FROM media_chunks WHERE upload_id = \(uploadID)", logger: store.logger
                ).decode(Int64.self) { chunks = n }
                guard chunks == expected else { throw SyncError.unavailable }  // the caller aborts: its chunks go
                // Under the family's lock, so that two uploads at once cannot both fit in the last of the quota.
                try await conn.statement("SELECT 1 FROM families WHERE id = \(spaceID) FOR UPDATE", logger: store.logger)
                var used: Int64 = 0
                var existed = false
                for try await (bytes, has) in try await conn.statement(
                    """
                    SELECT COALESCE(sum(size), 0)::BIGINT, COALESCE(bool_or(sha256 = \(info.sha256)), false)
                    FROM media WHERE family_id = \(spaceID)
                    """, logger: store.logger
                ).decode((Int64, Bool).self) { (used, existed) = (bytes, has) }
                if !existed { try MediaService.checkQuota(used: used, adding: info.size, quota: familyQuota) }
                var stored: String?
                for try await id in try await conn.statement(
                    """
                    INSERT INTO media (family_id, sha256, content_type, size, created_ms, referenced_ms, upload_id)
                    VALUES (\(spaceID), \(info.sha256), \(info.contentType), \(info.size), \(nowMs), \(nowMs), \(uploadID))
                    ON CONFLICT (family_id, sha256) DO UPDATE SET referenced_ms = GREATEST(media.referenced_ms, EXCLUDED.referenced_ms)
                    RETURNING upload_id
                    """, logger: store.logger
                ).decode(String.self) { stored = id }
                guard stored == uploadID else {
                    // Stored once: the family had these bytes already.
                    try await conn.statement("DELETE FROM media_chunks WHERE upload_id = \(uploadID)", logger: store.logger)
                    return false
                }
                return true
            }
        }
    }

    func abort() async {
        let uploadID = self.uploadID
        let store = self.store
        _ = try? await store.guarded { _ in
            try await store.client.statement("DELETE FROM media_chunks WHERE upload_id = \(uploadID)", logger: store.logger)
        }
    }
}
