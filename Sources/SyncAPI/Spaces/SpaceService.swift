/// The calls of protocol §15 on spaces, members and invitations: the engine side of `/spaces` and
/// `/invitations/accept`. Every change of a membership revokes the cached sessions it affects on this instance before
/// it answers (the store's notice reaches the others), so it applies to the caller's next call.
public struct SpaceService: Sendable {
    private(set) var store: any SpaceStore
    private(set) var accounts: AccountService
    let collections: CollectionRegistry
    public let limits: SpaceLimits
    /// An invitation's default and longest life (protocol §15: 7 and 30 days), and its most uses.
    static let defaultExpiry: Int64 = 7 * 86_400
    static let longestExpiry: Int64 = 30 * 86_400
    static let mostUses = 100

    /// The same service, its store calls under `budget` (a request's deadline).
    public func bounded(by budget: Deadline.Budget?) -> SpaceService {
        var service = self
        service.store = store.bounded(by: budget)
        service.accounts = accounts.bounded(by: budget)
        return service
    }

    public init(store: any SpaceStore, accounts: AccountService, collections: CollectionRegistry, limits: SpaceLimits = SpaceLimits()) {
        self.store = store
        self.accounts = accounts
        self.collections = collections
        self.limits = limits
    }

    static let nameSchema = ItemSchema(fields: [FieldSpec("name", .string(maxLength: Limits.nameLength), required: true)], rules: [])
    static let roleSchema = ItemSchema(fields: [FieldSpec("role", .oneOf(SpaceRole.allCases.map(\.rawValue)), required: true)], rules: [])
    static let invitationSchema = ItemSchema(
        fields: [
            FieldSpec("role", .oneOf(SpaceRole.allCases.map(\.rawValue)), required: true),
            FieldSpec("expiresIn", .integer(1...Double(longestExpiry))),
            FieldSpec("uses", .integer(1...Double(mostUses))),
        ], rules: [])
    static let acceptSchema = ItemSchema(fields: [FieldSpec("code", .string(maxLength: 512), required: true)], rules: [])

    /// `GET /spaces`: `[{"id", "name", "role", "home"}]`, in the order the account joined them.
    public func list(_ principal: AccountSession) async throws -> String {
        let spaces = try await store.spaces(accountID: principal.accountID)
        return JSONWriter.encode(.array(spaces.map { Self.json($0, home: $0.id == principal.homeSpaceID) }))
    }

    /// `POST /spaces` `{"name"}`: a new space the caller owns (with its family-scoped singleton, named as the space,
    /// when the model has one); 403 `quota_exceeded` past the caller's limits.
    public func create(_ principal: AccountSession, _ body: JSONValue) async throws -> String {
        let name = try Self.string("name", of: body, Self.nameSchema)
        let id = DatabaseIdentity.uuid()
        let nowMs = accounts.now()
        let familyItem = try AccountService.familyItem(collections, id: id, name: name, nowMs: nowMs)
        try await store.createSpace(id: id, name: name, familyItem: familyItem, ownerID: principal.accountID, nowMs: nowMs, limits: limits)
        accounts.revokeLocally(accountID: principal.accountID)
        return JSONWriter.encode(Self.json(SpaceRecord(id: id, name: name, role: .owner), home: nil))
    }

    /// `PUT /spaces/{id}` `{"name"}`, by an owner: `{"id", "name", "role"}`.
    public func rename(_ session: Session, _ body: JSONValue) async throws -> String {
        try session.require(.owner, to: "rename it")
        let name = try Self.string("name", of: body, Self.nameSchema)
        try await store.renameSpace(id: session.spaceID, name: name)
        return JSONWriter.encode(Self.json(SpaceRecord(id: session.spaceID, name: name, role: session.role), home: nil))
    }

    /// `POST /spaces/{id}/invitations` `{"role", "expiresIn"?, "uses"?}`, by an owner: `{"code", "role", "expiresAt",
    /// "uses"}`. The code (256 random bits) is shown once; the database keeps its SHA-256.
    public func invite(_ session: Session, _ body: JSONValue) async throws -> String {
        try session.require(.owner, to: "invite")
        let content = Dictionary(try Self.invitationSchema.canonicalContent(of: body, pathID: nil).map { ($0.key, $0.value) }) { a, _ in a }
        guard case .string(let roleName)? = content["role"], let role = SpaceRole(rawValue: roleName) else {
            throw SyncError.invalidField("role", "role is owner, member or reader.")
        }
        let expiresIn = content["expiresIn"].flatMap(Self.integer) ?? Self.defaultExpiry
        let uses = Int(content["uses"].flatMap(Self.integer) ?? 1)
        let code = BearerToken.generate()
        let expiresMs = accounts.now() + expiresIn * 1000
        try await store.insertInvitation(
            NewInvitation(
                hash: BearerToken.storageHash(code), spaceID: session.spaceID, role: role, uses: uses, expiresMs: expiresMs,
                createdBy: session.accountID),
            nowMs: accounts.now(), limits: limits)
        return JSONWriter.encode(
            .object([
                ("code", .string(code)), ("role", .string(role.rawValue)),
                ("expiresAt", .string(Timestamp.format(epochMilliseconds: expiresMs))), ("uses", .number(Double(uses))),
            ]))
    }

    /// `GET /spaces/{id}/invitations`, by an owner: the space's unused, unexpired invitations, oldest first, as
    /// `[{"id", "role", "usesLeft", "createdAt", "expiresAt", "createdBy"}]` (never a code: only its hash is kept;
    /// `createdAt` and `createdBy` are null for a code minted before the server recorded them).
    public func invitations(_ session: Session) async throws -> String {
        try session.require(.owner, to: "list its invitations")
        let invitations = try await store.invitations(spaceID: session.spaceID, nowMs: accounts.now())
        return JSONWriter.encode(.array(invitations.map(Self.json)))
    }

    /// `DELETE /spaces/{id}/invitations/{invitationId}`, by an owner: the code stops working at once (it then answers
    /// as an unknown code). 404 `not_found` for an id the space's invitations do not have.
    public func revokeInvitation(_ session: Session, id: String) async throws {
        try session.require(.owner, to: "revoke an invitation")
        guard try await store.revokeInvitation(spaceID: session.spaceID, id: id) else {
            throw SyncError.notFound("No such invitation in this space.")
        }
    }

    /// `POST /invitations/accept` `{"code"}`: `{"id", "name", "role"}` of the space joined (or already joined). An
    /// unknown, used-up or expired code answers 404 `not_found`, one answer for all three; failures are counted per
    /// client address like failed logins (429 past the limit). An account an owner removed from the space is refused
    /// (403 `forbidden`) every code of it minted before the removal: an owner re-admits it with a new code.
    public func accept(_ principal: AccountSession, _ body: JSONValue, client: String) async throws -> String {
        let code = try Self.string("code", of: body, Self.acceptSchema)
        let joined = try await accounts.throttled(key: "i:" + ClientAddress.key(client)) {
            try await store.acceptInvitation(
                hash: BearerToken.storageHash(code), accountID: principal.accountID, nowMs: accounts.now(), limits: limits)
        }
        guard let joined else { throw SyncError.notFound("No such invitation: the code is unknown, used up or expired.") }
        accounts.revokeLocally(accountID: principal.accountID, joined.id)
        return JSONWriter.encode(Self.json(joined, home: nil))
    }

    /// `GET /spaces/{id}/memberships` (and `/members`), by any member: `[{"accountId", "displayName", "role"}]`, in the
    /// order they joined.
    public func members(_ session: Session) async throws -> String {
        JSONWriter.encode(.array(try await store.members(spaceID: session.spaceID).map(Self.json)))
    }

    /// `PUT` (or `PATCH`) `/spaces/{id}/memberships/{accountId}` `{"role"}`, by an owner: the member as listed; 409
    /// `last_owner` when it would leave the space without an owner, 403 `quota_exceeded` when it raises an account that
    /// owns its most spaces already (security review L1). The caller's ownership is read again in the changing
    /// transaction (L2). An owner made a member or reader loses the invitations it minted there.
    public func setRole(_ session: Session, accountID: String, _ body: JSONValue) async throws -> String {
        try session.require(.owner, to: "change a member's role")
        let role = SpaceRole(stored: try Self.string("role", of: body, Self.roleSchema))
        let changed = try await store.setRole(
            spaceID: session.spaceID, accountID: accountID, role: role, by: session.accountID, limits: limits)
        guard changed else { throw SyncError.notFound("No member \(accountID) in this space.") }
        accounts.revokeLocally(accountID: accountID, session.spaceID)
        guard let member = try await store.member(spaceID: session.spaceID, accountID: accountID) else {
            throw SyncError.notFound("No member \(accountID) in this space.")
        }
        return JSONWriter.encode(Self.json(member))
    }

    /// `DELETE /spaces/{id}/memberships/{accountId}`, by an owner or by the member itself (leaving); 409 `last_owner`
    /// for the space's last owner. The member's next call on the space answers 404 and its streams of the space end; the
    /// invitations it minted there go, and a removed (not leaving) member can no longer use the space's codes minted
    /// before (security review H1). Its items of the lists private to each account go too, and with them their share of
    /// the space's quotas (security review M1).
    public func remove(_ session: Session, accountID: String) async throws {
        if accountID != session.accountID { try session.require(.owner, to: "remove another member") }
        let removed = try await store.removeMember(
            spaceID: session.spaceID, accountID: accountID, by: session.accountID,
            privateLists: collections.lists.filter(\.privateToAccount).map(\.name))
        guard removed else { throw SyncError.notFound("No member \(accountID) in this space.") }
        accounts.revokeLocally(accountID: accountID, session.spaceID)
    }

    /// Whether the model takes `word` for a path of a space: a collection's or a sync endpoint's name. The membership
    /// routes stay off such a word (a model may name a collection `memberships`, which is no reserved name).
    public func modelTakes(_ word: String) -> Bool {
        collections.model.collections.contains { $0.name == word || $0.sync == word }
    }

    static func json(_ space: SpaceRecord, home: Bool?) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("id", .string(space.id)), ("name", .string(space.name)), ("role", .string(space.role.rawValue)),
        ]
        if let home { members.append(("home", .bool(home))) }
        return .object(members)
    }

    static func json(_ member: MemberRecord) -> JSONValue {
        .object([
            ("accountId", .string(member.accountID)), ("displayName", .string(member.displayName)),
            ("role", .string(member.role.rawValue)),
        ])
    }

    static func json(_ invitation: InvitationRecord) -> JSONValue {
        .object([
            ("id", .string(invitation.id)), ("role", .string(invitation.role.rawValue)),
            ("usesLeft", .number(Double(invitation.usesLeft))),
            ("createdAt", invitation.createdMs.map { JSONValue.string(Timestamp.format(epochMilliseconds: $0)) } ?? .null),
            ("expiresAt", .string(Timestamp.format(epochMilliseconds: invitation.expiresMs))),
            ("createdBy", invitation.createdBy.map(JSONValue.string) ?? .null),
        ])
    }

    /// The required string field of a small body, checked by `schema`.
    static func string(_ field: String, of body: JSONValue, _ schema: ItemSchema) throws -> String {
        for member in try schema.canonicalContent(of: body, pathID: nil) where member.key == field {
            if case .string(let value) = member.value { return value }
        }
        throw SyncError.invalidField(field, "\(field) is required.")
    }

    static func integer(_ value: JSONValue) -> Int64? {
        if case .number(let n) = value { return Int64(exactly: n) }
        return nil
    }
}

extension Session {
    /// 403 `forbidden` unless the caller's role in the space is at least `role` (`action` is worded only for a refusal:
    /// the check runs on every read and write).
    public func require(_ role: SpaceRole, to action: @autoclosure () -> String) throws {
        guard self.role >= role else { throw SyncError.forbidden("A \(self.role.rawValue) of this space may not \(action()).") }
    }
}
