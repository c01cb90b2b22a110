import Hummingbird
import SyncAPI

/// Checks `Authorization: Bearer <token>` on every data route and puts the session in the context.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let accounts: AccountService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A sub-request of `POST /group` carries the group's session, checked once for the whole group: a lookup
        // inside the group's snapshot could read a token that a logout has deleted since (code review D1).
        if context.isSubrequest, context.session != nil { return try await next(request, context) }
        guard let token = Self.bearerToken(request), let session = try await accounts.authenticate(token: token) else {
            throw SyncError.unauthorized
        }
        var context = context
        context.session = session
        return try await next(request, context)
    }

    /// The token of an `Authorization: Bearer` header, if well-formed.
    static func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingPrefix(" ")
        guard (1...512).contains(token.utf8.count) else { return nil }
        return String(token)
    }
}
