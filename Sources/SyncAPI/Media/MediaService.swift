import Crypto
import NIOCore

/// Uploads and reads of a family's media (protocol §10): the engine side of `POST /media` and `GET /media/{sha256}`.
///
/// An upload streams through: each piece is checked against the size limit, hashed, and written to storage as it
/// arrives; the declared type must match the bytes' signature; the name is the SHA-256 of the bytes, so the same
/// bytes uploaded twice are the same URL, stored once per family.
public struct MediaService: Sendable {
    public private(set) var store: any MediaStore
    public let maxBytes: Int64
    /// Bytes of media a family may store (403 `quota_exceeded` past it).
    public let familyQuota: Int64
    /// The wall clock in milliseconds an upload is stamped with (the purge's retention counts from it).
    public let clock: @Sendable () -> Int64

    /// The same service, its store calls under `budget` (a request's deadline).
    public func bounded(by budget: Deadline.Budget?) -> MediaService {
        var service = self
        service.store = store.bounded(by: budget)
        return service
    }

    public init(
        store: any MediaStore, maxBytes: Int64, familyQuota: Int64 = FamilyQuotas().mediaBytes,
        clock: @escaping @Sendable () -> Int64 = WallClock.nowMs
    ) {
        self.store = store
        self.maxBytes = maxBytes
        self.familyQuota = familyQuota
        self.clock = clock
    }

    /// What an upload answers, and whether it stored new bytes.
    public struct Uploaded: Sendable {
        public let info: MediaInfo
        public let created: Bool

        /// `{"url", "sha256", "contentType", "size"}`.
        public var json: String {
            JSONWriter.encode(
                .object([
                    ("url", .string(info.url)), ("sha256", .string(info.sha256)), ("contentType", .string(info.contentType)),
                    ("size", .number(Double(info.size))),
                ]))
        }
    }

    /// Stores `body` for the family as `contentType`: 415 for a type not accepted or not what the bytes are, 413
    /// past `maxBytes` (declared or counted). Nothing is visible unless the whole upload succeeds.
    ///
    /// The family's media quota is checked when the upload commits, under the family's lock: bytes the family already
    /// has are never refused, and what a refused upload costs is bounded by `maxBytes`.
    ///
    /// Uploading is writing to the space: 403 `forbidden` below `member` (protocol §15), before anything of the body is
    /// read or stored (security review M2: readers filled the media quota, and kept their uploads alive by sending the
    /// same bytes again, which refreshes them).
    public func upload(
        _ session: Session, contentType: String?, declaredLength: Int64?, body: some AsyncSequence<ByteBuffer, any Error>
    ) async throws -> Uploaded {
        try Self.requireUpload(session)
        guard let type = contentType.flatMap(MediaType.init(contentType:)) else {
            throw SyncError.unsupportedMediaType(
                "Content-Type must be one of \(MediaType.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        if let declaredLength, declaredLength > maxBytes { throw SyncError.payloadTooLarge(limit: Int(maxBytes)) }
        let upload = try await store.beginUpload(spaceID: session.spaceID)
        do {
            var hasher = SHA256()
            var size: Int64 = 0
            var head: [UInt8] = []
            for try await piece in body {
                size += Int64(piece.readableBytes)
                guard size <= maxBytes else { throw SyncError.payloadTooLarge(limit: Int(maxBytes)) }
                if head.count < MediaType.signatureLength {
                    head += piece.readableBytesView.prefix(MediaType.signatureLength - head.count)
                    if head.count == MediaType.signatureLength { try Self.check(head, is: type) }
                }
                piece.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                try await upload.write(piece)
            }
            if head.count < MediaType.signatureLength { try Self.check(head, is: type) }
            let info = MediaInfo(sha256: Hex.lowercase(hasher.finalize()), contentType: type.rawValue, size: size)
            return Uploaded(info: info, created: try await upload.commit(info, nowMs: clock(), familyQuota: familyQuota))
        } catch {
            await upload.abort()
            throw error
        }
    }

    /// 403 `forbidden` for a caller below `member`: readers read a space's media, members and owners add to it.
    public static func requireUpload(_ session: Session) throws {
        try session.require(.member, to: "upload media")
    }

    /// 403 `quota_exceeded` when `adding` bytes to the family's `used` would pass its media quota.
    package static func checkQuota(used: Int64, adding: Int64, quota: Int64) throws {
        guard used + adding <= quota else {
            throw SyncError.quotaExceeded("A family stores at most \(quota) bytes of media.")
        }
    }

    static func check(_ head: [UInt8], is type: MediaType) throws {
        guard let actual = MediaType.sniff(head) else {
            throw SyncError.unsupportedMediaType("The bytes are not a JPEG, PNG, GIF, WebP, HEIC or MP4 file.")
        }
        guard actual == type else {
            throw SyncError.unsupportedMediaType("The bytes are \(actual.rawValue), not the declared \(type.rawValue).")
        }
    }

    /// The family's medium named `sha256`; 404 for a malformed name, an unknown one, or another family's (the same
    /// answer, so a family learns nothing of another's media).
    public func info(_ session: Session, sha256: String) async throws -> MediaInfo {
        guard MediaURL.isHash(sha256), let info = try await store.media(spaceID: session.spaceID, sha256: sha256) else {
            throw SyncError.notFound("No such media.")
        }
        return info
    }

    /// Streams bytes `range` of a medium to `body`.
    public func read(_ session: Session, _ info: MediaInfo, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await store.readMedia(spaceID: session.spaceID, sha256: info.sha256, range: range, body)
    }
}
