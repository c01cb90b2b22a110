import Hummingbird
import SyncAPI

/// `PUT`, `GET`, `DELETE /{collection}/{id}` for every writable collection of the registry (protocol §2).
struct ItemRoutes {
    let engine: SyncEngine
    let bodyMaxBytes: Int

    func add(to group: RouterGroup<AppRequestContext>) {
        for collection in Collections.writable {
            group.resource(
                "\(collection.name)/:id",
                [
                    .put: { request, context in
                        let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                        let answer = try await engine.put(
                            try context.requireSession(), collection, id: try Self.id(context), body: body,
                            preconditions: Self.preconditions(request))
                        return HTTPBodies.response(json: answer.body, etag: answer.etag)
                    },
                    .get: { request, context in
                        let answer = try await engine.get(
                            try context.requireSession(), collection, id: try Self.id(context),
                            ifNoneMatch: request.headers[.ifNoneMatch])
                        if answer.notModified { return HTTPBodies.notModified(etag: answer.etag) }
                        return HTTPBodies.response(json: answer.body, etag: answer.etag)
                    },
                    .delete: { request, context in
                        try await engine.delete(
                            try context.requireSession(), collection, id: try Self.id(context),
                            preconditions: Self.preconditions(request))
                        return Response(status: .noContent)
                    },
                ])
        }
    }

    static func id(_ context: AppRequestContext) throws -> String {
        guard let id = context.parameters.get("id") else { throw SyncError.notFound() }
        return id
    }

    static func preconditions(_ request: Request) -> WritePreconditions {
        WritePreconditions(ifMatch: request.headers[.ifMatch], ifNoneMatch: request.headers[.ifNoneMatch])
    }
}
