import HTTPTypes
import Hummingbird
import SyncAPI

/// The calls of protocol §15: `GET`/`POST /spaces`, `POST /invitations/accept`, and under `/spaces/{spaceId}` the
/// space itself (`PUT`), its invitations (made, listed and revoked by owners) and its memberships.
///
/// Memberships have paths of their own, `/spaces/{spaceId}/memberships[/{accountId}]` (security review L4: a `DELETE`
/// of a `members` item keyed by an account id removed that member from the space). `/spaces/{spaceId}/members/{id}` is
/// the item path of a model collection named `members` (the family app's) and nothing else; in a model without one it
/// still takes the membership calls it took before, so that no app of such a model breaks. `GET …/members` still lists
/// the memberships, in every model, as it did.
struct SpaceRoutes {
    typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Response

    let spaces: SpaceService
    let bodyMaxBytes: Int
    let clientAddress: ClientAddressResolver
    /// `POST /invitations/accept`, per client address, before anything else (as `/login`).
    let accepts: AdmissionLimiter

    /// `GET /spaces`, `POST /spaces` and `POST /invitations/accept`, on the authenticated unprefixed routes.
    func add(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "spaces",
            [
                .get: { _, context in HTTPBodies.response(json: try await spaces.bounded(by: context.budget).list(try context.requirePrincipal())) },
                .post: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(
                        .created, json: try await spaces.bounded(by: context.budget).create(try context.requirePrincipal(), body))
                },
            ])
        group.resource(
            "invitations/accept",
            [
                .post: { request, context in
                    let client = clientAddress.address(request, context)
                    try accepts.admit(client)
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(
                        json: try await spaces.bounded(by: context.budget).accept(try context.requirePrincipal(), body, client: client))
                }
            ])
    }

    /// The calls on one space, on the group of `/spaces/{spaceId}` (behind `SpaceMiddleware`). `members` holds the
    /// handlers of a model collection named `members`, if the model has one: `members/{id}` is then that collection's
    /// item path alone.
    func addPrefixed(to space: RouterGroup<AppRequestContext>, members: [HTTPRequest.Method: Handler]?) {
        space.resource(
            "",
            [
                .put: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(json: try await spaces.bounded(by: context.budget).rename(try context.requireSession(), body))
                }
            ])
        space.resource(
            "invitations",
            [
                .get: { _, context in
                    HTTPBodies.response(json: try await spaces.bounded(by: context.budget).invitations(try context.requireSession()))
                },
                .post: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(
                        .created, json: try await spaces.bounded(by: context.budget).invite(try context.requireSession(), body))
                },
            ])
        space.resource(
            "invitations/:invitationId",
            [
                .delete: { _, context in
                    try await spaces.bounded(by: context.budget).revokeInvitation(
                        try context.requireSession(), id: context.pathID("invitationId") ?? "")
                    return Response(status: .noContent)
                }
            ])
        let list: Handler = { _, context in
            HTTPBodies.response(json: try await spaces.bounded(by: context.budget).members(try context.requireSession()))
        }
        // A model whose collection or sync endpoint is named `memberships` keeps that path (its routes would clash).
        if !spaces.modelTakes("memberships") {
            space.resource("memberships", [.get: list])
            space.resource("memberships/:accountId", membership("accountId", [.put, .patch, .delete]))
        }
        space.resource("members", [.get: list])
        if let members {
            space.resource("members/:id", members)
        } else {
            space.resource("members/:id", membership("id", [.put, .delete]))
        }
    }

    /// The membership calls of `methods` on a path whose parameter `parameter` is the account id: `PUT` or `PATCH`
    /// `{"role"}` re-roles the member, `DELETE` removes it (or, its own, leaves).
    func membership(_ parameter: String, _ methods: Set<HTTPRequest.Method>) -> [HTTPRequest.Method: Handler] {
        let role: Handler = { request, context in
            let session = try context.requireSession()
            let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
            return HTTPBodies.response(
                json: try await spaces.bounded(by: context.budget).setRole(session, accountID: context.pathID(parameter) ?? "", body))
        }
        let remove: Handler = { _, context in
            try await spaces.bounded(by: context.budget).remove(try context.requireSession(), accountID: context.pathID(parameter) ?? "")
            return Response(status: .noContent)
        }
        let all: [HTTPRequest.Method: Handler] = [.put: role, .patch: role, .delete: remove]
        return all.filter { methods.contains($0.key) }
    }
}
