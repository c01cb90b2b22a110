/// The date of sync: an opaque string naming one position of one family's change counter in one database.
///
/// Wire form `<databaseID>.<spaceID>.<version>`, then `.<generation>` once the database accepted a breaking model
/// change (`ModelGenerations`), then `~<history>` once the space's counter moved on a history other than the
/// database's first (`SpaceLineage`: after a failover). Clients must not parse it; the server recognises a token from
/// another database, family or lost history and answers it as a first sync (protocol §3).
public struct SyncToken: Sendable, Equatable {
    public let databaseID: String
    public let spaceID: String
    public let version: Int64
    /// The model generation the date was issued in.
    public let generation: Int
    /// The history the space's counter was on when `version` was read (`SpaceLineage.history`; empty: the first).
    public let history: String

    public init(databaseID: String, spaceID: String, version: Int64, generation: Int = 0, history: String = "") {
        self.databaseID = databaseID
        self.spaceID = spaceID
        self.version = version
        self.generation = generation
        self.history = history
    }

    public var string: String {
        "\(databaseID).\(spaceID).\(version)" + (generation > 0 ? ".\(generation)" : "") + (history.isEmpty ? "" : "~\(history)")
    }

    /// What a client's `date` parameter means.
    public enum Parsed: Sendable, Equatable {
        /// No date: a first (full) sync.
        case absent
        /// A position this server issued for this family, in a model generation, on a history of its counter.
        case position(Int64, generation: Int, history: String)
        /// Well-formed but not answerable here (other database, other family, garbage): answer `sync: false`.
        case unanswerable
    }

    /// Reads a `date` parameter; throws `invalid_date` when it is malformed (protocol §3).
    public static func parse(_ text: String?, databaseID: String, spaceID: String) throws -> Parsed {
        guard let text else { return .absent }
        guard isWellFormed(text) else {
            throw SyncError.invalidDate("date must be 1 to 128 characters of A-Z a-z 0-9 . _ ~ -, sent back as received.")
        }
        var history = ""
        var position = Substring(text)
        if let tilde = position.firstIndex(of: "~") {
            history = String(position[position.index(after: tilde)...])
            position = position[..<tilde]
            guard SpaceLineage.isHistoryID(history) else { return .unanswerable }
        }
        let parts = position.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, parts[0] == databaseID, parts[1] == spaceID,
            let version = Int64(parts[2]), version >= 0, String(version) == parts[2]
        else { return .unanswerable }
        guard parts.count == 4 else { return .position(version, generation: 0, history: history) }
        guard let generation = Int(parts[3]), generation > 0, String(generation) == parts[3] else { return .unanswerable }
        return .position(version, generation: generation, history: history)
    }

    /// 1–128 characters of `[A-Za-z0-9._~-]`.
    public static func isWellFormed(_ text: String) -> Bool {
        ASCIIToken.matches(text, length: 1...128, punctuation: "._~-")
    }
}
