/// A store whose accounts, spaces, meta and purges are the statements shared by the backends (`AccountStatements`,
/// `SpaceStatements`, `MetaStatements`, `PurgeStatements`): its methods of those roles are written here once, for
/// every backend that lends its connections to them (`statementExecutor`). A backend writes only what it keeps its
/// own: the session lookup, migrations, the readiness ping and the tombstone purge.
public protocol SharedSQLStore: AccountStore, SpaceStore, SchemaStore, MaintenanceStore {
    /// How the shared statements reach this store's database.
    var statementExecutor: StatementExecutor { get }
}

/// A backend's `SQLExecutor`, boxed so that a public protocol can name it: what it holds is the package's own.
public struct StatementExecutor: Sendable {
    package let executor: any SQLExecutor

    package init(_ executor: some SQLExecutor) { self.executor = executor }
}

extension SharedSQLStore {
    public func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await AccountStatements(statementExecutor.executor).createFamily(
            id: id, name: name, familyItem: familyItem, account: account, nowMs: nowMs)
    }

    public func createAccount(_ account: NewAccount, spaceID: String, nowMs: Int64, maxMembers: Int, addedBy: String?) async throws {
        try await AccountStatements(statementExecutor.executor).createAccount(
            account, spaceID: spaceID, nowMs: nowMs, maxMembers: maxMembers, addedBy: addedBy)
    }

    public func accounts(spaceID: String) async throws -> [AccountRecord] {
        try await AccountStatements(statementExecutor.executor).accounts(spaceID: spaceID)
    }

    public func deleteAccount(
        accountID: String, spaceID: String, deletedBy: String, itemCollections: [String], privateLists: [String], nowMs: Int64
    ) async throws -> Bool {
        try await AccountStatements(statementExecutor.executor).deleteAccount(
            accountID: accountID, spaceID: spaceID, deletedBy: deletedBy, itemCollections: itemCollections, privateLists: privateLists,
            nowMs: nowMs)
    }

    public func credentials(usernameKey: String) async throws -> AccountCredentials? {
        try await AccountStatements(statementExecutor.executor).credentials(usernameKey: usernameKey)
    }

    public func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await AccountStatements(statementExecutor.executor).credentials(accountID: accountID)
    }

    public func insertToken(hash: String, accountID: String, expiresMs: Int64) async throws {
        try await AccountStatements(statementExecutor.executor).insertToken(hash: hash, accountID: accountID, expiresMs: expiresMs)
    }

    public func deleteToken(hash: String) async throws { try await AccountStatements(statementExecutor.executor).deleteToken(hash: hash) }

    public func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        try await AccountStatements(statementExecutor.executor).changePassword(
            accountID: accountID, passwordHash: passwordHash, keepTokenHash: keepTokenHash)
    }

    public func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        try await AccountStatements(statementExecutor.executor).countLoginAttempt(keys: keys, nowMs: nowMs, windowMs: windowMs)
    }

    public func rememberLogin(key: String, nowMs: Int64) async throws {
        try await AccountStatements(statementExecutor.executor).rememberLogin(key: key, nowMs: nowMs)
    }

    public func lastLogin(key: String) async throws -> Int64? { try await AccountStatements(statementExecutor.executor).lastLogin(key: key) }

    public func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        try await AccountStatements(statementExecutor.executor).forgiveLoginAttempt(resetKey: resetKey, uncountKeys: uncountKeys)
    }

    public func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await AccountStatements(statementExecutor.executor).purgeExpired(nowMs: nowMs, throttleBeforeMs: throttleBeforeMs)
    }

    public func identityAccount(issuer: String, subject: String) async throws -> String? {
        try await AccountStatements(statementExecutor.executor).identityAccount(issuer: issuer, subject: subject)
    }

    public func createIdentityAccount(
        _ account: NewAccount, issuer: String, subject: String, space: NewSpace, nowMs: Int64
    ) async throws -> (accountID: String, created: Bool) {
        try await AccountStatements(statementExecutor.executor).createIdentityAccount(
            account, issuer: issuer, subject: subject, space: space, nowMs: nowMs)
    }
}

extension SharedSQLStore {
    public func createSpace(id: String, name: String, familyItem: RowWrite?, ownerID: String, nowMs: Int64, limits: SpaceLimits) async throws {
        try await SpaceStatements(statementExecutor.executor).createSpace(
            id: id, name: name, familyItem: familyItem, ownerID: ownerID, nowMs: nowMs, limits: limits)
    }

    public func renameSpace(id: String, name: String) async throws {
        try await SpaceStatements(statementExecutor.executor).renameSpace(id: id, name: name)
    }

    public func spaces(accountID: String) async throws -> [SpaceRecord] {
        try await SpaceStatements(statementExecutor.executor).spaces(accountID: accountID)
    }

    public func members(spaceID: String) async throws -> [MemberRecord] {
        try await SpaceStatements(statementExecutor.executor).members(spaceID: spaceID)
    }

    public func member(spaceID: String, accountID: String) async throws -> MemberRecord? {
        try await SpaceStatements(statementExecutor.executor).member(spaceID: spaceID, accountID: accountID)
    }

    public func setRole(spaceID: String, accountID: String, role: SpaceRole, by callerID: String, limits: SpaceLimits) async throws -> Bool {
        try await SpaceStatements(statementExecutor.executor).setRole(
            spaceID: spaceID, accountID: accountID, role: role, by: callerID, limits: limits)
    }

    public func removeMember(spaceID: String, accountID: String, by callerID: String, privateLists: [String]) async throws -> Bool {
        try await SpaceStatements(statementExecutor.executor).removeMember(
            spaceID: spaceID, accountID: accountID, by: callerID, privateLists: privateLists)
    }

    public func insertInvitation(_ invitation: NewInvitation, nowMs: Int64, limits: SpaceLimits) async throws {
        try await SpaceStatements(statementExecutor.executor).insertInvitation(invitation, nowMs: nowMs, limits: limits)
    }

    public func invitations(spaceID: String, nowMs: Int64) async throws -> [InvitationRecord] {
        try await SpaceStatements(statementExecutor.executor).invitations(spaceID: spaceID, nowMs: nowMs)
    }

    public func revokeInvitation(spaceID: String, id: String) async throws -> Bool {
        try await SpaceStatements(statementExecutor.executor).revokeInvitation(spaceID: spaceID, id: id)
    }

    public func acceptInvitation(hash: String, accountID: String, nowMs: Int64, limits: SpaceLimits) async throws -> SpaceRecord? {
        try await SpaceStatements(statementExecutor.executor).acceptInvitation(hash: hash, accountID: accountID, nowMs: nowMs, limits: limits)
    }
}

extension SharedSQLStore {
    public func databaseID() async throws -> String { try await MetaStatements(statementExecutor.executor).databaseID() }

    public func rotateDatabaseID() async throws -> String { try await MetaStatements(statementExecutor.executor).rotateDatabaseID() }

    public func servedModel() async throws -> String? { try await MetaStatements(statementExecutor.executor).servedModel() }

    public func modelGenerations() async throws -> String? { try await MetaStatements(statementExecutor.executor).modelGenerations() }

    public func recordModel(_ normalized: String, generations: String?, expected: RecordedModel) async throws -> Bool {
        try await MetaStatements(statementExecutor.executor).recordModel(normalized, generations: generations, expected: expected)
    }

    public func rewriteBodies(collection: String, _ transform: @escaping @Sendable (String) -> String?) async throws -> Int {
        try await MetaStatements(statementExecutor.executor).rewriteBodies(collection: collection, transform)
    }

    public func purgeEmptiedSpaces(cutoffMs: Int64) async throws -> Int {
        try await PurgeStatements(statementExecutor.executor).purgeEmptiedSpaces(cutoffMs: cutoffMs)
    }
}
