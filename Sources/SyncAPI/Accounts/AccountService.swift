/// Signup, login, logout and extra accounts (protocol §1): the engine side of authentication.
public struct AccountService: Sendable {
    /// Settings an operator may change.
    public struct Settings: Sendable {
        public var signupEnabled = true
        public var tokenLifetimeSeconds: Int64 = 30 * 86_400
        public var maxFailedLogins = 10
        public var failedLoginWindowSeconds: Int64 = 15 * 60

        public init() {}
    }

    /// What signup and login hand the client.
    public struct Grant: Sendable {
        public let token: String
        public let accountID: String
        public let familyID: String
        public let expiresAt: String

        /// `{"token", "accountId", "familyId", "expiresAt"}`.
        public var json: String {
            JSONWriter.encode(
                .object([
                    ("token", .string(token)), ("accountId", .string(accountID)), ("familyId", .string(familyID)),
                    ("expiresAt", .string(expiresAt)),
                ]))
        }
    }

    let store: any SyncStore
    let hasher: any PasswordHasher
    public let settings: Settings
    let now: @Sendable () -> Int64

    public init(
        store: any SyncStore, hasher: any PasswordHasher, settings: Settings = Settings(),
        now: @escaping @Sendable () -> Int64 = WallClock.nowMs
    ) {
        self.store = store
        self.hasher = hasher
        self.settings = settings
        self.now = now
    }

    static let usernameRule: ItemSchema.Rule = { values throws in
        guard case .string(let name)? = values["username"] else { return }
        let ok = ASCIIToken.matches(name, length: 3...64, punctuation: "._-")
        guard ok else { throw SyncError.invalidField("username", "username is 3 to 64 characters of A-Z a-z 0-9 . _ -.") }
    }
    static let passwordRule: ItemSchema.Rule = { values throws in
        guard case .string(let password)? = values["password"], password.count >= 8 else {
            throw SyncError.invalidField("password", "password must be at least 8 characters.")
        }
    }
    static let signupSchema = ItemSchema(
        fields: [
            FieldSpec("family", .string(maxLength: Limits.nameLength), required: true),
            FieldSpec("username", .string(maxLength: 64), required: true),
            FieldSpec("password", .string(maxLength: 1024), required: true),
        ], rules: [usernameRule, passwordRule])
    static let accountSchema = ItemSchema(
        fields: [
            FieldSpec("username", .string(maxLength: 64), required: true),
            FieldSpec("password", .string(maxLength: 1024), required: true),
            FieldSpec("displayName", .string(maxLength: Limits.nameLength)),
        ], rules: [usernameRule, passwordRule])
    static let loginSchema = ItemSchema(fields: [
        FieldSpec("username", .string(maxLength: 1024), required: true),
        FieldSpec("password", .string(maxLength: 1024), required: true),
    ])

    private static func values(_ content: [(key: String, value: JSONValue)]) -> [String: String] {
        var out: [String: String] = [:]
        for member in content { if case .string(let s) = member.value { out[member.key] = s } }
        return out
    }

    /// `POST /signup`: a new family with its first account, and a token for it.
    public func signup(_ body: JSONValue) async throws -> Grant {
        guard settings.signupEnabled else { throw SyncError.signupDisabled }
        let v = Self.values(try Self.signupSchema.canonicalContent(of: body, pathID: nil))
        let familyID = DatabaseIdentity.uuid()
        let account = try await newAccount(username: v["username"]!, password: v["password"]!, displayName: nil)
        let nowMs = now()
        let family = try Collections.family.schema.canonicalContent(of: .object([("name", .string(v["family"]!))]), pathID: familyID)
        let familyBody = ItemBody.make(id: familyID, content: family, serverFields: [], modifiedMs: nowMs)
        try await store.createFamily(id: familyID, name: v["family"]!, familyBody: familyBody, account: account, nowMs: nowMs)
        return try await grant(Session(accountID: account.id, familyID: familyID))
    }

    /// `POST /accounts`: adds a login to the caller's family; answers the new account's public profile.
    public func addAccount(_ session: Session, _ body: JSONValue) async throws -> String {
        let v = Self.values(try Self.accountSchema.canonicalContent(of: body, pathID: nil))
        let account = try await newAccount(username: v["username"]!, password: v["password"]!, displayName: v["displayName"])
        try await store.createAccount(account, familyID: session.familyID, nowMs: now())
        return account.profileBody
    }

    private func newAccount(username: String, password: String, displayName: String?) async throws -> NewAccount {
        let id = DatabaseIdentity.uuid()
        let profile = ItemBody.make(
            id: id, content: [("username", .string(username)), ("displayName", .string(displayName ?? username))],
            serverFields: [], modifiedMs: now())
        let settings = ItemBody.make(
            id: id, content: try Collections.settings.schema.canonicalContent(of: .object([]), pathID: id), serverFields: [],
            modifiedMs: now())
        return NewAccount(
            id: id, username: username, displayName: displayName ?? username, passwordHash: try await hasher.hash(password),
            profileBody: profile, settingsBody: settings)
    }

    /// `POST /login`, throttled per username (protocol §1).
    public func login(_ body: JSONValue) async throws -> Grant {
        let v = Self.values(try Self.loginSchema.canonicalContent(of: body, pathID: nil))
        let key = v["username"]!.lowercased()
        let password = v["password"]!
        let nowMs = now()
        let windowMs = settings.failedLoginWindowSeconds * 1000
        let failures = try await store.failedLogins(usernameKey: key)
        if let failures, failures.count >= settings.maxFailedLogins, failures.windowStartMs + windowMs > nowMs {
            let wait = (failures.windowStartMs + windowMs - nowMs + 999) / 1000
            throw SyncError.tooManyRequests(retryAfter: Int(max(1, wait)))
        }
        let credentials = try await store.credentials(usernameKey: key)
        // Hash even for an unknown user, so both failures take the same time.
        let ok: Bool
        if let credentials {
            ok = try await hasher.verify(password, hash: credentials.passwordHash)
        } else {
            _ = try await hasher.hash(password)
            ok = false
        }
        guard let credentials, ok else {
            try await store.recordFailedLogin(usernameKey: key, nowMs: nowMs, windowMs: windowMs)
            throw SyncError.invalidCredentials
        }
        if failures != nil { try await store.clearFailedLogins(usernameKey: key) }
        return try await grant(Session(accountID: credentials.accountID, familyID: credentials.familyID))
    }

    /// `POST /logout`: the token stops working at once.
    public func logout(token: String) async throws {
        try await store.deleteToken(hash: BearerToken.storageHash(token))
    }

    /// The session of a bearer token, nil when unknown, revoked or expired.
    public func authenticate(token: String) async throws -> Session? {
        try await store.session(tokenHash: BearerToken.storageHash(token), nowMs: now())
    }

    private func grant(_ session: Session) async throws -> Grant {
        let token = BearerToken.generate()
        let expiresMs = now() + settings.tokenLifetimeSeconds * 1000
        try await store.insertToken(hash: BearerToken.storageHash(token), session: session, expiresMs: expiresMs)
        return Grant(
            token: token, accountID: session.accountID, familyID: session.familyID,
            expiresAt: Timestamp.format(epochMilliseconds: expiresMs))
    }
}
