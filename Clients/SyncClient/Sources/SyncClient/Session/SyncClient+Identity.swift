import Foundation

/// Why the server refused an ID token (protocol §14): the check its 401 names. An app tells the user to sign in with
/// the provider again for `expired`; the others mean a token of another app, provider or environment, or a server
/// not set up for it (`issuer`, `audience`), which no retry mends. `unknownKey` alone may pass a little later: the
/// provider rotated its keys and the server reads its key set again at most every 30 s.
public enum IdentityTokenRefusal: String, Sendable, Equatable, CaseIterable {
    case malformed
    case issuer
    case algorithm
    case unknownKey = "unknown key"
    case signature
    case audience
    case expired
    case notYetValid = "not yet valid"
    case subject

    /// The check a refusal's `detail` names (`ID token refused (expired): …`), nil when it names none of these.
    init?(detail: String) {
        guard let open = detail.firstIndex(of: "("), let close = detail[open...].firstIndex(of: ")") else { return nil }
        self.init(rawValue: String(detail[detail.index(after: open)..<close]))
    }
}

/// What a sign-in with an identity provider found: the account, whether this sign-in made it, and its spaces (none
/// for a new account signed in without `space`: it joins one by invitation, or creates one).
public struct IdentitySignIn: Sendable, Equatable {
    public let accountID: String
    public let created: Bool
    public let spaces: [SpaceInfo]
}

extension SyncClient {
    /// Signs in with an ID token of one of the server's identity providers (`POST /token`, protocol §14): Sign in with
    /// Apple's `identityToken`, a Google, Auth0, Firebase or Keycloak ID token. The first sign-in of an identity makes
    /// its account, with a home space named `space` when given (later sign-ins ignore it). The replica follows the same
    /// rules as `logIn`: the same account keeps it, another erases it, refused with `unpushedWrites` while writes wait
    /// unless `discardingPendingWrites`.
    ///
    /// A refused token throws `.idTokenRefused` with the check that failed; passwords turned off elsewhere do not
    /// matter here. Too many refusals from this address: `.throttled`, never retried by itself.
    @discardableResult
    public func signIn(idToken: String, space: String? = nil, discardingPendingWrites: Bool = false) async throws -> IdentitySignIn {
        var body: JSONObject = ["idToken": .string(idToken)]
        if let space { body["space"] = .string(space) }
        let answer = try await signInCall("/token", body)
        if answer.status == 401 {
            let detail = answer.json?["detail"]?.stringValue ?? ""
            throw SyncClientError.idTokenRefused(IdentityTokenRefusal(detail: detail), detail: detail)
        }
        guard answer.status == 200, let grant = try? JSONDecoder().decode(IdentityGrant.self, from: answer.body) else {
            throw SyncClientError.from(answer)
        }
        // The home space (the unprefixed paths'): the only one, else the one `GET /spaces` marks; none yet for an
        // account in no space (`createSpace` or `acceptInvitation` gives it one).
        var spaces = grant.spaces
        if spaces.count > 1 {
            let call = HTTPCall(method: "GET", url: url("/spaces"), headers: ["Authorization": "Bearer \(grant.token)"])
            let listed = try await deliver(call, auth: false)
            guard listed.status == 200, let decoded = try? JSONDecoder().decode([SpaceInfo].self, from: listed.body) else {
                throw SyncClientError.from(listed)
            }
            spaces = decoded
        }
        let home = spaces.count == 1 ? spaces[0].id : spaces.first { $0.home == true }?.id ?? ""
        try await adopt(
            ClientSession(token: grant.token, accountID: grant.accountId, familyID: home, expiresAt: grant.expiresAt),
            discardingPendingWrites: discardingPendingWrites)
        return IdentitySignIn(accountID: grant.accountId, created: grant.created, spaces: spaces)
    }

    /// An account in no space that creates or joins one: that space becomes its home (the server's rule: the first
    /// space joined), so the client's unprefixed calls address it.
    func adoptHomeIfNone(_ space: SpaceInfo) throws {
        guard let current = currentSession, current.familyID.isEmpty else { return }
        var updated = current
        updated.familyID = space.id
        try configuration.tokenStore.save(updated)
        session.withLock { $0 = updated }
    }
}

/// `POST /token`'s answer.
struct IdentityGrant: Decodable {
    let token: String
    let accountId: String
    let expiresAt: String
    let spaces: [SpaceInfo]
    let created: Bool
}
