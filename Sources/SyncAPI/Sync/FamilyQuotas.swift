/// How much one family may keep (protocol §8), so that one tenant cannot fill the disk that every family shares.
///
/// A write that would take the family over a quota answers 403 `quota_exceeded` and changes nothing; a write that
/// leaves the family's usage where it was or lowers it (a delete, a smaller replacement) is always accepted, so a
/// family over its quota (after an operator lowered it) can still clean up. The defaults are advertised in
/// `GET /api/v1/`. Accounts per family are `AccountService.Settings.maxAccountsPerFamily`.
public struct FamilyQuotas: Sendable, Equatable {
    /// Live items of every collection.
    public var items: Int64 = 1_000_000
    /// Bytes of the live items' stored content (canonical JSON).
    public var storedBytes: Int64 = 1 << 30
    /// Bytes of the family's media.
    public var mediaBytes: Int64 = 10 << 30

    public init() {}

    public init(items: Int64, storedBytes: Int64, mediaBytes: Int64) {
        self.items = items
        self.storedBytes = storedBytes
        self.mediaBytes = mediaBytes
    }

    /// Refuses `rows` when they would raise the family's usage past a quota: `usage` is what the family holds before
    /// the write, `before` the rows' stored versions (nil for none).
    func check(_ rows: [RowWrite], replacing before: (ItemKey) -> StoredItem?, usage: FamilyUsage) throws {
        var items: Int64 = 0
        var bytes: Int64 = 0
        for row in rows {
            if let old = before(row.key)?.live {
                items -= 1
                bytes -= Int64(old.body?.utf8.count ?? 0)
            }
            if let body = row.body {
                items += 1
                bytes += Int64(body.utf8.count)
            }
        }
        if items > 0, usage.items + items > self.items {
            throw SyncError.quotaExceeded("A family holds at most \(self.items) items.")
        }
        if bytes > 0, usage.bytes + bytes > storedBytes {
            throw SyncError.quotaExceeded("A family stores at most \(storedBytes) bytes of items.")
        }
    }
}
