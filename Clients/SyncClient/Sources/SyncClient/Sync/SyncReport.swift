/// What one `sync()` did.
public struct SyncReport: Sendable, Equatable {
    /// Writes the server took, and writes it refused for good (now in `failedOperations()`).
    public var pushed = 0
    public var failed = 0
    /// Write conflicts settled by a conflict handler (or the server-wins default).
    public var conflicts = 0
    /// The date of sync the replica is now at.
    public var date: String?
    /// Lists the server answered with `sync: false` (replaced whole) or `crop: true` (fresh top page).
    public var replaced: [String] = []
    /// The `GET /verify` answer of a verifying sync.
    var verifyAnswer: VerifyAnswer?
    /// What `verify()` found, carried through the single-flight runner.
    var verifyReport: VerifyReport?

    public init() {}
}

/// What `verify()` found (protocol §11): which lists were compared, and which differed and were downloaded again.
public struct VerifyReport: Sendable, Equatable {
    public var checked: [String] = []
    public var repaired: [String] = []
    /// The date of sync the comparison was made at.
    public var date: String?

    public init(checked: [String] = [], repaired: [String] = [], date: String? = nil) {
        self.checked = checked
        self.repaired = repaired
        self.date = date
    }

    /// True when every list matched.
    public var isExact: Bool { repaired.isEmpty }
}
