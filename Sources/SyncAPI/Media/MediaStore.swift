import Foundation
import NIOCore

/// Where a family's media bytes live (protocol §10): files under the data folder on the embedded default, chunks
/// inside PostgreSQL with that backend (so every instance serves every file). Uploads stream in and reads stream
/// out in pieces: no medium is ever held whole in memory.
public protocol MediaStore: DeadlineBound {
    /// Starts an upload for `spaceID`; its bytes are written as they arrive and become visible only at `commit`.
    func beginUpload(spaceID: String) async throws -> any MediaUpload
    /// The stored medium named `sha256` in the family, nil when the family has none by that name.
    func media(spaceID: String, sha256: String) async throws -> MediaInfo?
    /// Reads bytes `range` of a stored medium, handing them to `body` piece by piece.
    func readMedia(
        spaceID: String, sha256: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void
    ) async throws
    /// The bytes of every medium the family stores (its media quota counts them).
    func mediaBytes(spaceID: String) async throws -> Int64
    /// Deletes media that no item has named since `cutoffMs`, and uploads a crash left unfinished; returns how many
    /// media went. A live item names its media now; an item write marks what the item named before and names after
    /// (`ItemStatements.touchMedia`), so a deleted post's file outlives its tombstone, never the other way round.
    func purgeMedia(cutoffMs: Int64, nowMs: Int64) async throws -> Int
}

/// One upload in progress.
public protocol MediaUpload: Sendable {
    /// Appends bytes.
    func write(_ bytes: ByteBuffer) async throws
    /// Makes the bytes visible as `info` in the family; false when the family already had them (stored once). Throws
    /// 403 `quota_exceeded` when new bytes would take the family's media past `familyQuota` (checked in the
    /// transaction that records them).
    func commit(_ info: MediaInfo, nowMs: Int64, familyQuota: Int64) async throws -> Bool
    /// Drops what was written (refused or failed upload).
    func abort() async
}
