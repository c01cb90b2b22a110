/// What stays on the primary (protocol §13): every write, token, login, lock, purge, migration, and the reads that
/// cannot name a state to check a standby against (a page, a full list, a group's snapshot).
extension ReadRoutingStore {
    public func migrate(upTo count: Int?) async throws { try await primary.migrate(upTo: count) }
    public func databaseID() async throws -> String { try await primary.databaseID() }
    public func rotateDatabaseID() async throws -> String { try await primary.rotateDatabaseID() }
    public func ping() async throws { try await primary.ping() }
    public func servedModel() async throws -> String? { try await primary.servedModel() }
    public var primaryReads: any SyncStore { primary }
    public func recordModel(_ normalized: String, generations: String?, expected: RecordedModel) async throws -> Bool {
        try await primary.recordModel(normalized, generations: generations, expected: expected)
    }
    public func rewriteBodies(collection: String, _ transform: @escaping @Sendable (String) -> String?) async throws -> Int {
        try await primary.rewriteBodies(collection: collection, transform)
    }
    public func modelGenerations() async throws -> String? { try await primary.modelGenerations() }

    public func createFamily(id: String, name: String, familyItem: RowWrite?, account: NewAccount, nowMs: Int64) async throws {
        try await primary.createFamily(id: id, name: name, familyItem: familyItem, account: account, nowMs: nowMs)
    }
    public func createAccount(_ account: NewAccount, familyID: String, nowMs: Int64, maxAccounts: Int) async throws {
        try await primary.createAccount(account, familyID: familyID, nowMs: nowMs, maxAccounts: maxAccounts)
    }
    public func accounts(familyID: String) async throws -> [AccountRecord] { try await primary.accounts(familyID: familyID) }
    public func deleteAccount(accountID: String, familyID: String, itemCollections: [String], nowMs: Int64) async throws -> Bool {
        try await primary.deleteAccount(accountID: accountID, familyID: familyID, itemCollections: itemCollections, nowMs: nowMs)
    }
    public func credentials(usernameKey: String) async throws -> AccountCredentials? { try await primary.credentials(usernameKey: usernameKey) }
    public func insertToken(hash: String, session: Session, expiresMs: Int64) async throws {
        try await primary.insertToken(hash: hash, session: session, expiresMs: expiresMs)
    }
    public func session(tokenHash: String, nowMs: Int64) async throws -> (session: Session, expiresMs: Int64)? {
        try await primary.session(tokenHash: tokenHash, nowMs: nowMs)
    }
    public func deleteToken(hash: String) async throws { try await primary.deleteToken(hash: hash) }
    public func countLoginAttempt(keys: [String], nowMs: Int64, windowMs: Int64) async throws -> [String: ThrottleWindow] {
        try await primary.countLoginAttempt(keys: keys, nowMs: nowMs, windowMs: windowMs)
    }
    public func forgiveLoginAttempt(resetKey: String?, uncountKeys: [String]) async throws {
        try await primary.forgiveLoginAttempt(resetKey: resetKey, uncountKeys: uncountKeys)
    }
    public func rememberLogin(key: String, nowMs: Int64) async throws { try await primary.rememberLogin(key: key, nowMs: nowMs) }
    public func lastLogin(key: String) async throws -> Int64? { try await primary.lastLogin(key: key) }
    public func credentials(accountID: String) async throws -> (username: String, credentials: AccountCredentials)? {
        try await primary.credentials(accountID: accountID)
    }
    public func changePassword(accountID: String, passwordHash: String, keepTokenHash: String) async throws {
        try await primary.changePassword(accountID: accountID, passwordHash: passwordHash, keepTokenHash: keepTokenHash)
    }
    public func purgeExpired(nowMs: Int64, throttleBeforeMs: Int64) async throws -> Int {
        try await primary.purgeExpired(nowMs: nowMs, throttleBeforeMs: throttleBeforeMs)
    }

    public func item(familyID: String, key: ItemKey) async throws -> StoredItem? { try await primary.item(familyID: familyID, key: key) }
    public func forEachVerifyRow(familyID: String, collections: [String], _ each: @escaping @Sendable (VerifyRow) -> Void) async throws -> Int64 {
        try await primary.forEachVerifyRow(familyID: familyID, collections: collections, each)
    }
    public func write(
        familyID: String, key: ItemKey, parent: ItemKey?, nowMs: Int64, plan: @escaping @Sendable (WriteContext) throws -> WritePlan
    ) async throws -> WriteOutcome {
        try await primary.write(familyID: familyID, key: key, parent: parent, nowMs: nowMs, plan: plan)
    }
    public func page(familyID: String, query: PageQuery) async throws -> PageRows? { try await primary.page(familyID: familyID, query: query) }
    public func purgeTombstones(cutoffMs: Int64) async throws -> Int { try await primary.purgeTombstones(cutoffMs: cutoffMs) }
    public func withReadSnapshot<T: Sendable>(_ body: @escaping @Sendable (any SyncStore) async throws -> T) async throws -> T {
        try await primary.withReadSnapshot(body)
    }
    public var isInReadSnapshot: Bool { false }
    public func pinnedVersion(familyID: String) async throws -> Int64 { try await primary.pinnedVersion(familyID: familyID) }
    public func forEachPinnedLivePage(familyID: String, collection: String, _ page: (LiveBodies) async throws -> Void) async throws {
        try await primary.forEachPinnedLivePage(familyID: familyID, collection: collection, page)
    }
    public func streamLiveRows(
        familyID: String, collection: String, start: @escaping @Sendable (Int64) async throws -> Void,
        page: @escaping @Sendable (LiveBodies) async throws -> Void
    ) async throws {
        try await primary.streamLiveRows(familyID: familyID, collection: collection, start: start, page: page)
    }
}
