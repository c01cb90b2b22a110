import Hummingbird
import SyncAPI

/// Checks `Authorization: Bearer <token>` on every data route and puts the session in the context.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let accounts: AccountService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A sub-request of `POST /group` carries the group's session. A read keeps it: a lookup inside the group's
        // snapshot could read a token that a logout has deleted since. A write runs alone, outside any snapshot, and
        // checks the token again (from the session cache, which a revocation on any instance empties): a write after a
        // slow first answer never lands once the account is deleted or logged out.
        if context.isSubrequest, let session = context.session {
            if request.method != .get {
                guard let token = Self.bearerToken(request), try await accounts.authenticate(token: token) == session else {
                    throw SyncError.unauthorized
                }
            }
            return try await next(request, context)
        }
        guard let token = Self.bearerToken(request), let session = try await accounts.authenticate(token: token) else {
            throw SyncError.unauthorized
        }
        var context = context
        context.session = session
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
