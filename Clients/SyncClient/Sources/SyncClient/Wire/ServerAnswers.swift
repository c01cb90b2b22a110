/// What signup and login hand the client (protocol §1).
public struct Grant: Codable, Sendable, Equatable {
    public var token: String
    public var accountId: String
    public var familyId: String
    public var expiresAt: String
}

/// An error answer (RFC 9457 problem+json, protocol §7), with its stable `code`.
public struct Problem: Codable, Sendable, Equatable {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String
    public var code: ServerErrorCode
    public var field: String?
}

/// `GET /api/v1/` (protocol §8): what the server allows, so the SDK adapts instead of guessing.
public struct ServerDescription: Codable, Sendable, Equatable {
    /// The server's bounds on one call.
    public struct Limits: Codable, Sendable, Equatable {
        public var groupMaxRequests: Int
        public var nbMax: Int
        public var maxChildren: Int
        public var bodyMaxBytes: Int

        public init(groupMaxRequests: Int = 20, nbMax: Int = 500, maxChildren: Int = 100, bodyMaxBytes: Int = 1_048_576) {
            self.groupMaxRequests = groupMaxRequests
            self.nbMax = nbMax
            self.maxChildren = maxChildren
            self.bodyMaxBytes = bodyMaxBytes
        }
    }

    public var version: String
    public var limits: Limits
    public var tombstoneRetentionSeconds: Int
    public var signup: Bool
    public var mediaMaxBytes: Int?
    public var mediaTypes: [String]?
}

/// `GET /verify` (protocol §11): a count and a digest per list, to prove the replica exact.
public struct VerifyAnswer: Codable, Sendable, Equatable {
    /// The count and digest of one list.
    public struct List: Codable, Sendable, Equatable {
        public var count: Int
        /// Lowercase hex SHA-256 over the live items sorted by id of `id`, NUL, `modified`, newline.
        public var digest: String
    }

    public var date: String
    public var lists: [String: List]
}

/// `POST /media` (protocol §10): the immutable URL of uploaded bytes.
public struct MediaUploaded: Codable, Sendable, Equatable {
    public var url: String
    public var sha256: String
    public var contentType: String
    public var size: Int
}
