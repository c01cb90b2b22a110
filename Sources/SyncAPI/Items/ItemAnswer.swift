import Foundation

/// One item as a write or a read answers it: canonical JSON and its ETag.
public struct ItemAnswer: Sendable, Equatable {
    public let body: String
    /// Strong entity tag, quotes included (`"17"`): the family version of the item's last change.
    public let etag: String
    /// True when a GET's `If-None-Match` matched: answer 304.
    public let notModified: Bool

    init(item: StoredItem, notModified: Bool = false) {
        self.body = item.body ?? "null"
        self.etag = "\"\(item.version)\""
        self.notModified = notModified
    }
}

/// Optional preconditions of a write (protocol §2): `If-Match` and `If-None-Match: *`.
public struct WritePreconditions: Sendable {
    public var ifMatch: String?
    public var ifNoneMatch: String?

    public init(ifMatch: String? = nil, ifNoneMatch: String? = nil) {
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
    }

    /// Throws `precondition_failed` when the live item (nil when missing or deleted) does not satisfy them.
    func check(live: StoredItem?) throws {
        if let ifMatch {
            guard let live else { throw SyncError.preconditionFailed }
            let tags = EntityTags.list(ifMatch, strong: true)
            guard tags.contains("*") || tags.contains("\"\(live.version)\"") else { throw SyncError.preconditionFailed }
        }
        if let ifNoneMatch, live != nil {
            let tags = EntityTags.list(ifNoneMatch)
            if tags.contains("*") || tags.contains("\"\(live!.version)\"") { throw SyncError.preconditionFailed }
        }
    }
}

/// Parsing of `If-Match` / `If-None-Match` lists (RFC 9110 §13.1).
public enum EntityTags {
    /// The tags of the list. `If-None-Match` compares weakly: a weak tag counts by its opaque part. `If-Match`
    /// (`strong`) compares strongly: a weak tag never matches, so it is dropped.
    public static func list(_ header: String, strong: Bool = false) -> [String] {
        header.split(separator: ",").compactMap { part in
            var tag = part.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") {
                if strong { return nil }
                tag.removeFirst(2)
            }
            return tag
        }
    }
}
