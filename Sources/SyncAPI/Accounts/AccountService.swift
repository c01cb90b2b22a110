import Crypto
import Foundation

/// Signup, login, logout, password changes and extra accounts (protocol §1): the engine side of authentication.
public struct AccountService: Sendable {
    /// Settings an operator may change.
    public struct Settings: Sendable {
        public var signupEnabled = true
        /// False with `--disable-passwords` (protocol §14): accounts sign in only through identity providers; signup,
        /// login, password changes and new password accounts answer 403 `signup_disabled`.
        public var passwordsEnabled = true
        public var tokenLifetimeSeconds: Int64 = 30 * 86_400
        /// Failed logins for one username from one client address before 429 (protocol §1).
        public var maxFailuresPerPair = 10
        /// Failed logins from one address, across usernames, before 429 (password spraying).
        public var maxFailuresPerAddress = 30
        /// Failed logins for one username from all addresses before 429 for everyone (a visible attack).
        public var maxFailuresPerUsername = 100
        /// The throttling window.
        public var failureWindowSeconds: Int64 = 15 * 60
        /// Most members of one family (protocol §1: 20; `POST /accounts` over it answers 403 `quota_exceeded`), counted
        /// as memberships of the space, as an accepted invitation counts them against `SpaceLimits.members`: `serve` sets
        /// both from `--max-accounts-per-family`.
        public var maxAccountsPerFamily = 20

        public init() {}
    }

    /// What signup and login hand the client.
    public struct Grant: Sendable {
        public let token: String
        public let accountID: String
        public let spaceID: String
        public let expiresAt: String

        /// `{"token", "accountId", "familyId", "expiresAt"}`.
        public var json: String {
            JSONWriter.encode(
                .object([
                    ("token", .string(token)), ("accountId", .string(accountID)), ("familyId", .string(spaceID)),
                    ("expiresAt", .string(expiresAt)),
                ]))
        }
    }

    /// How logs name a username: the first 12 hex digits of the SHA-256 of its lower-cased form. An operator asked
    /// about a user computes the same (`printf %s alice | sha256sum | cut -c1-12`); a log reader learns no username.
    public static func logName(of username: String) -> String {
        String(Hex.lowercase(SHA256.hash(data: Data(username.lowercased().utf8))).prefix(12))
    }

    private(set) var store: any AccountStore & SpaceStore
    let hasher: any PasswordHasher
    public let settings: Settings
    let now: @Sendable () -> Int64
    /// Called once when a username reaches its overall failure limit (a visible attack, for logs and metrics), with
    /// `logName(of:)` of the username: logs carry no username.
    let onUsernameLocked: @Sendable (String) -> Void
    /// Sessions of recent tokens (nil: every request looks its token up).
    let sessions: SessionCache?
    /// The token lookups in flight, shared by their concurrent callers.
    let lookups = SessionLookups()
    /// Wakes this instance's live streams of a revocation key (a space, `@account`), so that a stream whose token or
    /// membership just went ends at once rather than at its next recheck.
    let wakeStreams: @Sendable (String) -> Void
    /// The model's collections: its family-scoped singleton (created at signup from the family's name) and its
    /// account-scoped singleton (created with its defaults for each account).
    let collections: CollectionRegistry
    /// The identity providers `POST /token` trusts (nil: none, and every exchange is refused).
    let identity: IdentityVerifier?

    /// The same service, its store calls under `budget` (a request's deadline).
    public func bounded(by budget: Deadline.Budget?) -> AccountService {
        var service = self
        service.store = store.bounded(by: budget)
        return service
    }

    public init(
        store: any AccountStore & SpaceStore, hasher: any PasswordHasher, settings: Settings = Settings(), sessions: SessionCache? = nil,
        now: @escaping @Sendable () -> Int64 = WallClock.nowMs, onUsernameLocked: @escaping @Sendable (String) -> Void = { _ in },
        collections: CollectionRegistry, wakeStreams: @escaping @Sendable (String) -> Void = { _ in },
        identity: IdentityVerifier? = nil
    ) {
        self.identity = identity
        self.wakeStreams = wakeStreams
        self.collections = collections
        self.store = store
        self.hasher = hasher
        self.settings = settings
        self.sessions = sessions
        self.now = now
        self.onUsernameLocked = onUsernameLocked
    }

    static let usernameRule: ItemSchema.Rule = { values throws in
        guard case .string(let name)? = values["username"] else { return }
        let ok = ASCIIToken.matches(name, length: 3...64, punctuation: "._-")
        guard ok else { throw SyncError.invalidField("username", "username is 3 to 64 characters of A-Z a-z 0-9 . _ -.") }
    }
    static func minimumLength(_ field: String) -> ItemSchema.Rule {
        { values throws in
            guard case .string(let password)? = values[field], TextRules.length(password) >= 8 else {
                throw SyncError.invalidField(field, "\(field) must be at least 8 characters.")
            }
        }
    }
    static let passwordRule = minimumLength("password")
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
    /// Login checks the username like signup does, so a malformed one is a clear 400, never a lookup.
    static let loginSchema = ItemSchema(
        fields: [
            FieldSpec("username", .string(maxLength: 64), required: true),
            FieldSpec("password", .string(maxLength: 1024), required: true),
        ], rules: [usernameRule])

    static let passwordSchema = ItemSchema(
        fields: [
            FieldSpec("oldPassword", .string(maxLength: 1024), required: true),
            FieldSpec("newPassword", .string(maxLength: 1024), required: true),
        ], rules: [minimumLength("newPassword")])

    private static func values(_ content: [(key: String, value: JSONValue)]) -> [String: String] {
        var out: [String: String] = [:]
        for member in content { if case .string(let s) = member.value { out[member.key] = s } }
        return out
    }

    /// `POST /signup`: a new family with its first account, and a token for it.
    public func signup(_ body: JSONValue) async throws -> Grant {
        guard settings.signupEnabled else { throw SyncError.signupDisabled }
        try requirePasswords()
        let v = Self.values(try Self.signupSchema.canonicalContent(of: body, pathID: nil))
        // A taken username costs a lookup, not a hash; the insert still checks it atomically.
        guard try await store.credentials(usernameKey: v["username"]!.lowercased()) == nil else { throw SyncError.usernameTaken }
        let spaceID = DatabaseIdentity.uuid()
        let account = try await newAccount(username: v["username"]!, password: v["password"]!, displayName: nil)
        let nowMs = now()
        let familyItem = try Self.familyItem(collections, id: spaceID, name: v["family"]!, nowMs: nowMs)
        try await store.createFamily(id: spaceID, name: v["family"]!, familyItem: familyItem, account: account, nowMs: nowMs)
        return try await grant(accountID: account.id)
    }

    /// The item of a new family's (space's) family-scoped singleton, if the model has one, named as the family when it
    /// has a `name` field.
    static func familyItem(_ collections: CollectionRegistry, id: String, name: String, nowMs: Int64) throws -> RowWrite? {
        guard let singleton = collections.familySingleton else { return nil }
        let named = singleton.schema.fields.contains { $0.name == "name" }
        let content = try singleton.schema.canonicalContent(of: .object(named ? [("name", .string(name))] : []), pathID: id)
        return RowWrite(
            key: ItemKey(collection: singleton.name, id: id), body: ItemBody.make(id: id, content: content, serverFields: [], modifiedMs: nowMs))
    }

    /// `POST /accounts`: adds a login to the caller's family, as a member; answers the new account's public profile.
    /// Owners only (security review M4: a member's logins bypassed the owners' invitations and outlived its removal),
    /// checked again under the space's lock; 403 `quota_exceeded` when the space has its most members (by membership,
    /// as invitations count them).
    public func addAccount(_ session: Session, _ body: JSONValue) async throws -> String {
        try session.require(.owner, to: "add an account")
        try requirePasswords()
        let v = Self.values(try Self.accountSchema.canonicalContent(of: body, pathID: nil))
        guard try await store.credentials(usernameKey: v["username"]!.lowercased()) == nil else { throw SyncError.usernameTaken }
        let account = try await newAccount(username: v["username"]!, password: v["password"]!, displayName: v["displayName"])
        try await store.createAccount(
            account, spaceID: session.spaceID, nowMs: now(), maxMembers: settings.maxAccountsPerFamily, addedBy: session.accountID)
        return account.profileBody
    }

    /// `GET /accounts`: `{"accounts": [{"id", "username", "displayName", "owner"}]}`, oldest first: the accounts made
    /// in the family that still belong to it, each with whether it owns it.
    public func listAccounts(_ session: Session) async throws -> String {
        let accounts = try await store.accounts(spaceID: session.spaceID)
        return JSONWriter.encode(
            .object([
                (
                    "accounts",
                    .array(
                        accounts.map { account in
                            .object([
                                ("id", .string(account.id)), ("username", .string(account.username)),
                                ("displayName", .string(account.displayName)), ("owner", .bool(account.owner)),
                            ])
                        })
                )
            ]))
    }

    /// `DELETE /accounts/{id}`: by the account itself, or by an owner of the caller's space for an account made in it
    /// that belongs to that space alone and does not own it (a login `POST /accounts` made, a kid's); its tokens stop
    /// working at once on every instance. 404 for an account the space does not hold, 403 `forbidden` otherwise (an
    /// owner, or an account of other spaces, only deletes itself: its deletion would reach spaces and private items the
    /// caller does not own; security review H2), 409 `last_owner` when the account is the last owner of a space with
    /// other members. The roles are checked again under the space's lock.
    ///
    /// An account deletes itself whatever space the call addresses, and with no space at all: an identity account
    /// that belongs to none (protocol §14) must still be able to leave, as app stores require. Its own space's owner
    /// deletes itself only when no one else is in that space (which is then emptied and purged after the retention).
    public func deleteAccount(_ principal: AccountSession, in session: Session?, accountID: String) async throws {
        guard ASCIIToken.matches(accountID, length: 1...64, punctuation: "._-") else {
            throw SyncError.invalidID("An account id is 1 to 64 characters of A-Z a-z 0-9 . _ -.")
        }
        let spaceID: String
        if accountID == principal.accountID {
            guard let madeIn = principal.signupSpaceID else { throw SyncError.unauthorized }
            let accounts = try await store.accounts(spaceID: madeIn)
            let owner = accounts.contains { $0.id == accountID && $0.owner }
            let othersIn = accounts.contains { $0.id != accountID }
            let otherOwner = accounts.contains { $0.owner && $0.id != accountID }
            guard !owner || !othersIn || otherOwner else {
                throw SyncError.forbidden("The family's owner cannot delete its own account while others are in the family.")
            }
            spaceID = madeIn
        } else {
            guard let session else { throw SyncError.notFound("This account belongs to no space.") }
            let accounts = try await store.accounts(spaceID: session.spaceID)
            guard accounts.contains(where: { $0.id == accountID }) else {
                throw SyncError.notFound("No account \(accountID) in this family.")
            }
            guard session.role == .owner else { throw SyncError.forbidden("Only the family's owner deletes another account.") }
            spaceID = session.spaceID
        }
        guard
            try await store.deleteAccount(
                accountID: accountID, spaceID: spaceID, deletedBy: principal.accountID, itemCollections: collections.accountItemCollections,
                privateLists: collections.lists.filter(\.privateToAccount).map(\.name), nowMs: now())
        else {
            throw SyncError.notFound("No account \(accountID) in this family.")
        }
        // This instance drops them before it answers; others on the revocation notice.
        revokeLocally(accountID: accountID, spaceID)
    }

    /// Drops the cached sessions of an account (and of `spaces`) on this instance, before an answer: the revocation
    /// notice reaches the other instances.
    func revokeLocally(accountID: String, _ spaces: String...) {
        for key in spaces + [AccountSession.accountKey(accountID)] {
            sessions?.revoke(family: key)
            wakeStreams(key)
        }
    }

    /// 403 `signup_disabled` when the server signs accounts in only through identity providers.
    func requirePasswords() throws {
        guard settings.passwordsEnabled else {
            throw SyncError(.signupDisabled, detail: "Passwords are turned off on this server: sign in with an identity provider (POST /token).")
        }
    }

    /// A new account's rows. An identity account (protocol §14) has neither: its username is `~` and its id (which no
    /// one can type: usernames are A-Z a-z 0-9 . _ -) and its password hash `!` (which no password matches).
    func newAccount(username: String?, password: String?, displayName: String?) async throws -> NewAccount {
        let id = DatabaseIdentity.uuid()
        let username = username ?? "~" + id
        let profile = ItemBody.make(
            id: id, content: [("username", .string(username)), ("displayName", .string(displayName ?? username))],
            serverFields: [], modifiedMs: now())
        let singleton = collections.accountSingleton
        let settings = try singleton.map { spec in
            ItemBody.make(id: id, content: try spec.schema.canonicalContent(of: .object([]), pathID: id), serverFields: [], modifiedMs: now())
        }
        var hash = "!"
        if let password { hash = try await hasher.hash(password) }
        return NewAccount(
            id: id, username: username, displayName: displayName ?? username, passwordHash: hash,
            profileBody: profile, settingsBody: settings ?? "", settingsCollection: singleton?.name)
    }

    /// `POST /login`, throttled per (username, address), per address and per username (protocol §1).
    public func login(_ body: JSONValue, client: String) async throws -> Grant {
        try requirePasswords()
        let v = Self.values(try Self.loginSchema.canonicalContent(of: body, pathID: nil))
        let username = v["username"]!
        let credentials = try await throttledCheck(username: username, password: v["password"]!, client: client) {
            try await store.credentials(usernameKey: username.lowercased())
        }
        return try await grant(accountID: credentials.accountID)
    }

    /// `POST /password`: checks the old password (throttled like login), stores the new one and revokes every other
    /// token of the account at once.
    public func changePassword(_ session: Session, currentTokenHash: String, client: String, _ body: JSONValue) async throws {
        try requirePasswords()
        let v = Self.values(try Self.passwordSchema.canonicalContent(of: body, pathID: nil))
        guard let account = try await store.credentials(accountID: session.accountID) else { throw SyncError.unauthorized }
        _ = try await throttledCheck(username: account.username, password: v["oldPassword"]!, client: client) { account.credentials }
        let hash = try await hasher.hash(v["newPassword"]!)
        try await store.changePassword(accountID: session.accountID, passwordHash: hash, keepTokenHash: currentTokenHash)
        // This instance drops them before it answers; others on the revocation notice.
        revokeLocally(accountID: session.accountID, session.spaceID)
    }

    /// Counts the attempt first (so N parallel guesses count N), answers 429 past a limit, then checks the password;
    /// a success takes the attempt back. Only checked guesses stay counted: a refused attempt (429) is taken back from
    /// every key but the one that refused it, so one address hammering one username never locks that username out for
    /// other addresses; an attempt that was never checked (503 from the hasher, a database error) is taken back whole.
    /// An unknown username costs one hash too, so both failures take the same time.
    private func throttledCheck(
        username: String, password: String, client: String, lookup: () async throws -> AccountCredentials?
    ) async throws -> AccountCredentials {
        let user = username.lowercased()
        let keys = LoginThrottleKeys(username: user, client: client)
        let nowMs = now()
        let windowMs = settings.failureWindowSeconds * 1000
        let counted = try await store.countLoginAttempt(keys: keys.all, nowMs: nowMs, windowMs: windowMs)
        for (key, limit) in [
            (keys.pair, settings.maxFailuresPerPair), (keys.address, settings.maxFailuresPerAddress),
            (keys.username, settings.maxFailuresPerUsername),
        ] {
            guard let window = counted[key], window.attempts > limit else { continue }
            if key == keys.username {
                if window.attempts == limit + 1 { onUsernameLocked(Self.logName(of: user)) }
                // A stranger cannot lock a user out: the username-wide rule never refuses an address (IPv6: its /64)
                // that logged in as this user within `knownForMs`; the pair and address rules still hold for it.
                if let last = try await store.lastLogin(key: keys.known), nowMs - last < LoginThrottleKeys.knownForMs { continue }
            }
            try await store.forgiveLoginAttempt(resetKey: nil, uncountKeys: keys.all.filter { $0 != key })
            throw SyncError.tooManyRequests(retryAfter: Int(max(1, (window.startMs + windowMs - nowMs + 999) / 1000)))
        }
        let credentials: AccountCredentials?
        let ok: Bool
        do {
            credentials = try await lookup()
            if let credentials {
                ok = try await hasher.verify(password, hash: credentials.passwordHash)
            } else {
                try await hasher.verifyNothing(password)
                ok = false
            }
        } catch {
            try? await store.forgiveLoginAttempt(resetKey: nil, uncountKeys: keys.all)
            throw error
        }
        guard let credentials, ok else { throw SyncError.invalidCredentials }
        try await store.forgiveLoginAttempt(resetKey: keys.pair, uncountKeys: [keys.address, keys.username])
        try await store.rememberLogin(key: keys.known, nowMs: nowMs)
        return credentials
    }

    /// Runs `attempt` counted against `key` like a failed login from one address (protocol §1: `maxFailuresPerAddress`
    /// within the window): 429 past the limit. An attempt that finds what it looks for (non-nil), or fails for another
    /// reason, is taken back; only misses stay counted.
    func throttled<T: Sendable>(key: String, _ attempt: () async throws -> T?) async throws -> T? {
        let nowMs = now()
        let windowMs = settings.failureWindowSeconds * 1000
        let counted = try await store.countLoginAttempt(keys: [key], nowMs: nowMs, windowMs: windowMs)
        if let window = counted[key], window.attempts > settings.maxFailuresPerAddress {
            throw SyncError.tooManyRequests(retryAfter: Int(max(1, (window.startMs + windowMs - nowMs + 999) / 1000)))
        }
        let result: T?
        do {
            result = try await attempt()
        } catch {
            try? await store.forgiveLoginAttempt(resetKey: nil, uncountKeys: [key])
            throw error
        }
        if result != nil { try await store.forgiveLoginAttempt(resetKey: nil, uncountKeys: [key]) }
        return result
    }

    /// `POST /logout`: the token stops working at once.
    public func logout(_ session: Session, token: String) async throws {
        try await store.deleteToken(hash: BearerToken.storageHash(token))
        revokeLocally(accountID: session.accountID, session.spaceID)
    }

    /// The session of a bearer token, nil when unknown, revoked or expired: from the cache when it holds the token,
    /// else from the database. `fromDatabase`: skip the cache (and refill it), for a caller that found the cached
    /// memberships short of what it needs: a space joined or created through another instance reaches this one's cache
    /// by a notice, and the client's next call must not wait for it.
    public func authenticate(token: String, fromDatabase: Bool = false) async throws -> AccountSession? {
        let hash = BearerToken.storageHash(token)
        let nowMs = now()
        if !fromDatabase, let cached = sessions?.session(tokenHash: hash, nowMs: nowMs) { return cached }
        let read: () async throws -> SessionLookups.Found = {
            let ticket = sessions?.ticket()
            guard let found = try await store.session(tokenHash: hash, nowMs: nowMs) else { return nil }
            if let sessions, let ticket {
                sessions.remember(tokenHash: hash, session: found.session, expiresMs: found.expiresMs, nowMs: nowMs, ticket: ticket)
            }
            return found
        }
        // One lookup per token at a time while revocations reach this instance: callers that arrive meanwhile, with no
        // revocation in between, share its answer. Otherwise each reads for itself (a revoked token must stop at once).
        guard let epoch = sessions?.sharedLookupEpoch() else { return try await read()?.session }
        return try await lookups.lookup("\(hash):\(epoch)", read)?.session
    }

    /// A new token for the account; its `familyId` names the account's home space.
    func grant(accountID: String) async throws -> Grant {
        let token = BearerToken.generate()
        let hash = BearerToken.storageHash(token)
        let expiresMs = now() + settings.tokenLifetimeSeconds * 1000
        try await store.insertToken(hash: hash, accountID: accountID, expiresMs: expiresMs)
        // Read back as a request would, and cached: the client's first call with the token needs no lookup.
        let ticket = sessions?.ticket()
        guard let found = try await store.session(tokenHash: hash, nowMs: now()) else { throw SyncError.invalidCredentials }
        if let sessions, let ticket {
            sessions.remember(tokenHash: hash, session: found.session, expiresMs: found.expiresMs, nowMs: now(), ticket: ticket)
        }
        return Grant(
            token: token, accountID: accountID, spaceID: found.session.homeSpaceID ?? "",
            expiresAt: Timestamp.format(epochMilliseconds: expiresMs))
    }
}

/// The three login-throttle keys of an attempt (protocol §1): the (username, address) pair, the address across
/// usernames, and the username across addresses.
package struct LoginThrottleKeys {
    package let pair: String
    package let address: String
    package let username: String
    /// Not counted: when this username last logged in from this address (the username-wide rule spares it).
    package let known: String
    /// How long a successful login keeps its address known: 30 days.
    package static let knownForMs: Int64 = 30 * 86_400_000

    /// `client`: the address; counted by `ClientAddress.key` (IPv6 by /64).
    package init(username: String, client: String) {
        let client = ClientAddress.key(client)
        pair = "p:\(username)|\(client)"
        address = "a:\(client)"
        self.username = "u:\(username)"
        known = "k:\(username)|\(client)"
    }

    package var all: [String] { [pair, address, username] }
}
