import Foundation

/// `POST /token` (protocol §14): an ID token of a trusted provider exchanged for a SyncAPI token. The account is the
/// identity (`iss`, `sub`): made by its first exchange, with a home space when the body names one, else with none.
extension AccountService {
    /// The answer of an exchange: the grant, the account's spaces, and whether this exchange made the account.
    public struct IdentityGrant: Sendable {
        public let grant: Grant
        public let spaces: [SpaceRecord]
        public let created: Bool

        /// `{"token", "accountId", "expiresAt", "spaces": [{"id", "name", "role"}], "created"}`.
        public var json: String {
            JSONWriter.encode(
                .object([
                    ("token", .string(grant.token)), ("accountId", .string(grant.accountID)), ("expiresAt", .string(grant.expiresAt)),
                    (
                        "spaces",
                        .array(
                            spaces.map { .object([("id", .string($0.id)), ("name", .string($0.name)), ("role", .string($0.role.rawValue))]) })
                    ),
                    ("created", .bool(created)),
                ]))
        }
    }

    static let exchangeSchema = ItemSchema(fields: [
        FieldSpec("idToken", .string(maxLength: IdentityVerifier.maxTokenBytes), required: true),
        FieldSpec("space", .string(maxLength: Limits.nameLength)),
    ])

    /// Verifies the token (a refusal counts against the client address like a failed login: 429 past the limit), then
    /// signs the identity's account in, making it on the first exchange (403 `signup_disabled` then, with signup off).
    public func exchange(_ body: JSONValue, client: String) async throws -> IdentityGrant {
        let content = try Self.exchangeSchema.canonicalContent(of: body, pathID: nil)
        var values: [String: String] = [:]
        for member in content { if case .string(let text) = member.value { values[member.key] = text } }
        guard let identity else { throw IdentityVerifier.refused("issuer", "this server trusts no identity provider") }
        var refusal: SyncError?
        let verified = try await throttled(key: "x:" + ClientAddress.key(client)) { () async throws -> VerifiedIdentity? in
            do {
                return try await identity.verify(values["idToken"] ?? "")
            } catch let error as SyncError where error.code == .invalidCredentials {
                refusal = error
                return nil
            }
        }
        guard let verified else { throw refusal ?? SyncError.invalidCredentials }
        var accountID = try await store.identityAccount(issuer: verified.issuer, subject: verified.subject)
        var created = false
        if accountID == nil {
            // `--disable-signup` closes every way to a new account: an identity's first exchange is a signup. Identities
            // that already have an account still sign in.
            guard settings.signupEnabled else {
                throw SyncError(
                    .signupDisabled, detail: "Signup is turned off on this server: only identities that already have an account sign in.")
            }
            let account = try await newAccount(username: nil, password: nil, displayName: verified.displayName ?? verified.provider)
            let spaceID = DatabaseIdentity.uuid()
            let nowMs = now()
            let name = values["space"]
            let space = NewSpace(
                id: spaceID, name: name ?? "", familyItem: try name.flatMap { try Self.familyItem(collections, id: spaceID, name: $0, nowMs: nowMs) },
                member: name != nil)
            (accountID, created) = try await store.createIdentityAccount(
                account, issuer: verified.issuer, subject: verified.subject, space: space, nowMs: nowMs)
        }
        guard let accountID else { throw SyncError.invalidCredentials }
        let grant = try await grant(accountID: accountID)
        return IdentityGrant(grant: grant, spaces: try await store.spaces(accountID: accountID), created: created)
    }
}
