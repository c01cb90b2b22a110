/// Which history of the database a space's counter is on, so that a date of sync issued on a history the database no
/// longer has (commits lost in a failover with asynchronous replication) is never answered as a delta, while every
/// date the database still holds is (docs/decisions.md, "Histories").
///
/// A history is one line of commits: the database's first, then one per promotion of a standby (PostgreSQL starts a
/// new timeline), named by a random id that the first write on the new timeline mints (`syncapi_history()`). A
/// space's row records the history its counter last moved on and, from its first move on that history (its
/// crossing), the history it came from and the counter value it had then: the last state the two lines share.
/// Dates carry the history the counter was on when they were read (`SyncToken`).
public struct SpaceLineage: Sendable, Equatable {
    /// The history of the counter's last move; empty: the database's first.
    public let history: String
    /// The history the counter was on before it first moved on `history`.
    public let forkFrom: String
    /// The counter's value when it first moved on `history`: every value up to it is shared with `forkFrom`.
    public let forkVersion: Int64

    /// A space whose counter never moved on a history other than the first (every space of SQLite).
    public static let original = SpaceLineage(history: "", forkFrom: "", forkVersion: 0)

    public init(history: String, forkFrom: String, forkVersion: Int64) {
        self.history = history
        self.forkFrom = forkFrom
        self.forkVersion = forkVersion
    }

    /// Whether a date at `version`, issued on `history`, names a state this space's line holds.
    ///
    /// On the space's own history: yes (its counter never went back on it; "not past the counter" is checked apart). On
    /// the history it came from: only up to the fork, the last value both lines share; a value past it was taken on a
    /// line this database does not have. Any other history (a lost line, or one two crossings back): no, a full sync.
    public func admits(history dateHistory: String, version: Int64) -> Bool {
        dateHistory == history || (dateHistory == forkFrom && version <= forkVersion)
    }

    /// The lineage a statement reads as one column, `<history>/<forkFrom>/<forkVersion>`, NULL (nil) for `original`.
    public init?(column: String?) {
        guard let column else { return nil }
        let parts = column.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let fork = Int64(parts[2]) else { return nil }
        self.init(history: String(parts[0]), forkFrom: String(parts[1]), forkVersion: fork)
    }

    /// The lineage of that column as a statement returned it: `original` for NULL.
    public static func read(_ column: String?) -> SpaceLineage {
        SpaceLineage(column: column) ?? .original
    }

    /// The SQL expression of that column over a `families` row aliased `alias`.
    public static func column(_ alias: String) -> String {
        "CASE WHEN \(alias).history = '' THEN NULL ELSE \(alias).history || '/' || \(alias).fork_from || '/' || \(alias).fork_version END"
    }

    /// A history id as `syncapi_history()` mints it: 16 of `[a-z0-9]`.
    public static func isHistoryID(_ text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
    }
}

/// Where a client's date of sync puts it: a value of its space's counter, on a history of the database.
public struct DatePosition: Sendable, Equatable {
    public let version: Int64
    /// `SyncToken.history`.
    public let history: String

    public init(version: Int64, history: String = "") {
        self.version = version
        self.history = history
    }

    /// Whether the space's line (read with the answer) holds this position's state.
    public func isHeld(by lineage: SpaceLineage) -> Bool {
        lineage.admits(history: history, version: version)
    }
}

/// A space's change counter as one snapshot read it: its value and the history it is on (what a date names).
public struct SpaceCounter: Sendable, Equatable {
    public let version: Int64
    public let lineage: SpaceLineage

    public init(version: Int64, lineage: SpaceLineage = .original) {
        self.version = version
        self.lineage = lineage
    }
}
