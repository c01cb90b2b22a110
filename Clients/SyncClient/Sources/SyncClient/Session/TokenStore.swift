/// Where the session's token lives between launches: a small protocol so apps choose (Keychain on Apple platforms,
/// a private file on Linux and for the command line).
public protocol TokenStore: Sendable {
    /// The stored session, nil when signed out.
    func load() throws -> ClientSession?
    /// Stores the session (replacing any).
    func save(_ session: ClientSession) throws
    /// Forgets the session.
    func clear() throws
}

/// A signed-in session: the bearer token and who it belongs to.
public struct ClientSession: Codable, Sendable, Equatable {
    public var token: String
    public var accountID: String
    public var familyID: String
    /// When the token stops working (RFC 3339), as the server said.
    public var expiresAt: String?

    public init(token: String, accountID: String, familyID: String, expiresAt: String? = nil) {
        self.token = token
        self.accountID = accountID
        self.familyID = familyID
        self.expiresAt = expiresAt
    }
}
