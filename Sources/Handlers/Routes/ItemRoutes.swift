import Hummingbird
import SyncAPI

/// `PUT`, `GET`, `DELETE /{collection}/{id}` for every writable collection of the registry (protocol §2), children
/// under their parent (`/threads/{parentId}/messages/{id}`).
struct ItemRoutes {
    let engine: SyncEngine
    let bodyMaxBytes: Int

    func add(to group: RouterGroup<AppRequestContext>) {
        for collection in Collections.writable {
            let path: RouterPath
            if let parent = collection.parentName {
                // Hummingbird needs one parameter name per position: the parent's id is `id` as on its own path.
                path = "\(parent)/:id/\(collection.name)/:childId"
            } else {
                path = "\(collection.name)/:id"
            }
            group.resource(
                path,
                [
                    .put: { request, context in
                        let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                        let answer = try await engine.put(
                            try context.requireSession(), try Self.address(collection, context), body: body,
                            preconditions: Self.preconditions(request))
                        return HTTPBodies.response(json: answer.body, etag: answer.etag)
                    },
                    .get: { request, context in
                        let answer = try await engine.get(
                            try context.requireSession(), try Self.address(collection, context), ifNoneMatch: request.headers[.ifNoneMatch])
                        if answer.notModified { return HTTPBodies.notModified(etag: answer.etag) }
                        return HTTPBodies.response(json: answer.body, etag: answer.etag)
                    },
                    .delete: { request, context in
                        try await engine.delete(
                            try context.requireSession(), try Self.address(collection, context), preconditions: Self.preconditions(request))
                        return Response(status: .noContent)
                    },
                ])
        }
    }

    static func address(_ collection: CollectionSpec, _ context: AppRequestContext) throws -> ItemAddress {
        if collection.parentName != nil {
            guard let parentID = context.parameters.get("id"), let id = context.parameters.get("childId") else { throw SyncError.notFound() }
            return ItemAddress(collection, parentID: parentID, id: id)
        }
        guard let id = context.parameters.get("id") else { throw SyncError.notFound() }
        return ItemAddress(collection, id: id)
    }

    static func preconditions(_ request: Request) -> WritePreconditions {
        WritePreconditions(ifMatch: request.headers[.ifMatch], ifNoneMatch: request.headers[.ifNoneMatch])
    }
}
