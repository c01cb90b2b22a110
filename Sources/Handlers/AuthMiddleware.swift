import Hummingbird
import SyncAPI

/// Checks `Authorization: Bearer <token>` on every data route and puts the account and its session in its home space
/// in the context (`SpaceMiddleware` then moves it to the space a prefixed path names).
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let accounts: AccountService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A sub-request of `POST /group` checks the group's token again (from the session cache, which a revocation on
        // any instance empties; the lookup reads the database as it is, never the group's snapshot): a write after a
        // slow first answer never lands, and a read after it answers nothing, once the account is deleted, logged out
        // or removed from the space. A sub-request's space is resolved again from the re-checked account by
        // `SpaceMiddleware` when its URL names one.
        if context.isSubrequest, let principal = context.principal {
            guard let token = Self.bearerToken(request), let fresh = try await accounts.bounded(by: context.budget).authenticate(token: token),
                fresh.accountID == principal.accountID
            else {
                throw SyncError.unauthorized
            }
            var context = context
            context.principal = fresh
            context.session = fresh.session(in: nil)
            return try await next(request, context)
        }
        guard let token = Self.bearerToken(request), let principal = try await accounts.bounded(by: context.budget).authenticate(token: token) else {
            throw SyncError.unauthorized
        }
        var context = context
        context.principal = principal
        context.session = principal.session(in: nil)
        return try await next(request, context)
    }

    /// The token of an `Authorization: Bearer` header, if well-formed: the scheme (any case) after optional spaces, one
    /// space, then 1 to 512 bytes (one more leading space is dropped). Read on the header's bytes: a split and
    /// `lowercased()` would be a visible part of a delta request's cost.
    static func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let bytes = header.utf8
        var index = bytes.startIndex
        while index < bytes.endIndex, bytes[index] == UInt8(ascii: " ") { index = bytes.index(after: index) }
        for expected in "bearer".utf8 {
            guard index < bytes.endIndex, bytes[index] | 0x20 == expected else { return nil }
            index = bytes.index(after: index)
        }
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: " ") else { return nil }
        index = bytes.index(after: index)
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: " ") { index = bytes.index(after: index) }
        let length = bytes.distance(from: index, to: bytes.endIndex)
        guard (1...512).contains(length) else { return nil }
        return String(header[index...])
    }
}

/// On `/api/v1/spaces/{spaceId}/…`: the caller's session in that space. A space the caller does not belong to answers
/// exactly as one that does not exist (404 `not_found`, protocol §15).
///
/// The principal may come from this instance's session cache, which learns of a space joined or created through
/// another instance by a notice (`NOTIFY` on PostgreSQL). So a space missing from it is looked up once more in the
/// database before the 404: a client behind a load balancer that creates a space on one instance and invites into it
/// through another gets its answer, not a 404 for the notice's delivery time.
struct SpaceMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let accounts: AccountService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let principal = context.principal else { throw SyncError.unauthorized }
        guard let spaceID = context.pathID("spaceId") else { throw SyncError.notFound("No such space.") }
        var context = context
        if let session = principal.session(in: spaceID) {
            context.session = session
        } else if let token = AuthMiddleware.bearerToken(request),
            let fresh = try await accounts.bounded(by: context.budget).authenticate(token: token, fromDatabase: true),
            fresh.accountID == principal.accountID, let session = fresh.session(in: spaceID)
        {
            context.principal = fresh
            context.session = session
        } else {
            throw SyncError.notFound("No such space.")
        }
        return try await next(request, context)
    }
}
