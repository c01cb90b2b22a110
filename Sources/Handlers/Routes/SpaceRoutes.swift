import HTTPTypes
import Hummingbird
import SyncCore

/// The calls of protocol §15: `GET`/`POST /spaces`, `POST /invitations/accept`, and under `/spaces/{spaceId}` the
/// space itself (`PUT`), its invitations (made, listed and revoked by owners) and its members.
///
/// `/spaces/{spaceId}/members/{id}` is also the item path of a model collection named `members` (the family app's):
/// a `PUT` or `DELETE` there names the membership of `{id}` when `{id}` is a member account of the space, else the
/// item (docs/decisions.md, "Spaces").
struct SpaceRoutes {
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
                .get: { _, context in HTTPBodies.response(json: try await spaces.list(try context.requirePrincipal())) },
                .post: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(.created, json: try await spaces.create(try context.requirePrincipal(), body))
                },
            ])
        group.resource(
            "invitations/accept",
            [
                .post: { request, context in
                    let client = clientAddress.address(request, context)
                    try accepts.admit(client)
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(json: try await spaces.accept(try context.requirePrincipal(), body, client: client))
                }
            ])
    }

    /// The calls on one space, on the group of `/spaces/{spaceId}` (behind `SpaceMiddleware`). `members` holds the
    /// handlers of a model collection named `members`, if the model has one.
    func addPrefixed(
        to space: RouterGroup<AppRequestContext>,
        members: [HTTPRequest.Method: @Sendable (Request, AppRequestContext) async throws -> Response]?
    ) {
        space.resource(
            "",
            [
                .put: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(json: try await spaces.rename(try context.requireSession(), body))
                }
            ])
        space.resource(
            "invitations",
            [
                .get: { _, context in HTTPBodies.response(json: try await spaces.invitations(try context.requireSession())) },
                .post: { request, context in
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    return HTTPBodies.response(.created, json: try await spaces.invite(try context.requireSession(), body))
                },
            ])
        space.resource(
            "invitations/:invitationId",
            [
                .delete: { _, context in
                    try await spaces.revokeInvitation(try context.requireSession(), id: context.pathID("invitationId") ?? "")
                    return Response(status: .noContent)
                }
            ])
        space.resource(
            "members", [.get: { _, context in HTTPBodies.response(json: try await spaces.members(try context.requireSession())) }])
        var memberHandlers = members ?? [:]
        let itemPut = members?[.put]
        let itemDelete = members?[.delete]
        memberHandlers[.put] = { request, context in
            let session = try context.requireSession()
            let target = context.pathID("id") ?? ""
            if let itemPut, !(try await spaces.isMember(session, accountID: target)) { return try await itemPut(request, context) }
            let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
            return HTTPBodies.response(json: try await spaces.setRole(session, accountID: target, body))
        }
        memberHandlers[.delete] = { request, context in
            let session = try context.requireSession()
            let target = context.pathID("id") ?? ""
            if let itemDelete, !(try await spaces.isMember(session, accountID: target)) { return try await itemDelete(request, context) }
            try await spaces.remove(session, accountID: target)
            return Response(status: .noContent)
        }
        space.resource("members/:id", memberHandlers)
    }
}
