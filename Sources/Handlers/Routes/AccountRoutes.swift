import Hummingbird
import SyncAPI

/// `POST /signup`, `/login`, `/logout`, `/password`, `/accounts` (protocol §1), and `/token` (§14).
struct AccountRoutes {
    /// The most an account call's body takes (signup, login, password, a new account: a few hundred bytes): a body
    /// declared larger is 413 before a byte of it is read, and one sent larger stops being read there, so bodies
    /// trickled to these unauthenticated routes cost this much each, not the item routes' limit.
    static let bodyMaxBytes = 16 << 10

    /// The account calls' paths, under `/api/v1` (`RoutePolicies` gives their routes `bodyMaxBytes`).
    static let words: Set<Substring> = ["signup", "login", "logout", "password", "accounts"]

    /// `POST /token`'s body: an ID token of at most 16 KiB, and a space's name.
    static let tokenBodyMaxBytes = 20 << 10

    let accounts: AccountService
    let bodyMaxBytes: Int
    let clientAddress: ClientAddressResolver
    /// `POST /login` and `/password`, per client address, before anything else (protocol §8).
    let logins: AdmissionLimiter
    /// `POST /signup` and `/accounts`, likewise.
    let signups: AdmissionLimiter

    /// Routes that need no token.
    func addPublic(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "signup",
            [
                .post: { request, context in
                    try signups.admit(clientAddress.address(request, context))
                    let grant = try await accounts.bounded(by: context.budget).signup(try await HTTPBodies.json(request, limit: bodyMaxBytes))
                    return HTTPBodies.response(.created, json: grant.json)
                }
            ])
        group.resource(
            "login",
            [
                .post: { request, context in
                    let client = clientAddress.address(request, context)
                    try logins.admit(client)
                    let grant = try await accounts.bounded(by: context.budget).login(
                        try await HTTPBodies.json(request, limit: bodyMaxBytes), client: client)
                    return HTTPBodies.response(.ok, json: grant.json)
                }
            ])
        // Protocol §14: an identity provider's ID token for a SyncAPI token, admitted per address like a login.
        group.resource(
            "token",
            [
                .post: { request, context in
                    let client = clientAddress.address(request, context)
                    try logins.admit(client)
                    let body = try await HTTPBodies.json(request, limit: Self.tokenBodyMaxBytes)
                    return HTTPBodies.response(.ok, json: try await accounts.bounded(by: context.budget).exchange(body, client: client).json)
                }
            ])
    }

    /// Routes behind `AuthMiddleware`.
    func addAuthenticated(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "logout",
            [
                .post: { request, context in
                    if let token = AuthMiddleware.bearerToken(request) {
                        try await accounts.bounded(by: context.budget).logout(try context.requireSession(), token: token)
                    }
                    return Response(status: .noContent)
                }
            ])
        group.resource(
            "password",
            [
                .post: { request, context in
                    guard let token = AuthMiddleware.bearerToken(request) else { throw SyncError.unauthorized }
                    let client = clientAddress.address(request, context)
                    try logins.admit(client)
                    try await accounts.bounded(by: context.budget).changePassword(
                        try context.requireSession(), currentTokenHash: BearerToken.storageHash(token), client: client,
                        try await HTTPBodies.json(request, limit: bodyMaxBytes))
                    return Response(status: .noContent)
                }
            ])
        group.resource(
            "accounts",
            [
                .post: { request, context in
                    try signups.admit(clientAddress.address(request, context))
                    let profile = try await accounts.bounded(by: context.budget).addAccount(
                        try context.requireSession(), try await HTTPBodies.json(request, limit: bodyMaxBytes))
                    return HTTPBodies.response(.created, json: profile)
                },
                .get: { _, context in
                    HTTPBodies.response(json: try await accounts.bounded(by: context.budget).listAccounts(try context.requireSession()))
                },
            ])
        group.resource(
            "accounts/:id",
            [
                .delete: { _, context in
                    try await accounts.bounded(by: context.budget).deleteAccount(
                        try context.requirePrincipal(), in: context.session, accountID: context.pathID("id") ?? "")
                    return Response(status: .noContent)
                }
            ])
    }
}
