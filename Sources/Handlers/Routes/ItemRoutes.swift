import Foundation
import HTTPTypes
import Hummingbird
import SyncAPI

/// `PUT`, `PATCH`, `GET`, `DELETE /{collection}/{id}` for every writable collection of the registry (protocol §2), children
/// under their parent (`/threads/{parentId}/messages/{id}`).
struct ItemRoutes {
    let engine: SyncEngine
    let bodyMaxBytes: Int

    /// Adds every collection's item routes but those of `except` (whose handlers a caller combines with its own).
    func add(to group: RouterGroup<AppRequestContext>, except: Set<String> = []) {
        for collection in engine.collections.writable where !except.contains(collection.name) {
            if case .singleton(let perAccount) = collection.kind {
                addSingleton(collection, perAccount: perAccount, to: group)
                continue
            }
            let path: RouterPath
            if let parent = collection.parentName {
                // Hummingbird needs one parameter name per position: the parent's id is `id` as on its own path.
                path = "\(parent)/:id/\(collection.name)/:childId"
            } else {
                path = "\(collection.name)/:id"
            }
            group.resource(path, handlers(collection))
        }
    }

    /// The handlers of a list's or child's item path, by method.
    func handlers(_ collection: CollectionSpec) -> [HTTPRequest.Method: @Sendable (Request, AppRequestContext) async throws -> Response] {
        [
            .put: { request, context in
                let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                let answer = try await context.engine(engine).put(
                    try context.requireSession(), try Self.address(collection, context), body: body,
                    preconditions: Self.preconditions(request))
                return HTTPBodies.response(json: answer.body, etag: answer.etag)
            },
            .patch: { request, context in
                let patch = try await Self.mergePatch(request, limit: bodyMaxBytes)
                let answer = try await context.engine(engine).patch(
                    try context.requireSession(), try Self.address(collection, context), patch: patch,
                    preconditions: Self.preconditions(request))
                return HTTPBodies.response(json: answer.body, etag: answer.etag)
            },
            .get: { request, context in
                let answer = try await context.engine(engine).get(
                    try context.requireSession(), try Self.address(collection, context), ifNoneMatch: request.headers[.ifNoneMatch])
                if answer.notModified { return HTTPBodies.notModified(etag: answer.etag) }
                return HTTPBodies.response(json: answer.body, etag: answer.etag)
            },
            .delete: { request, context in
                try await context.engine(engine).delete(
                    try context.requireSession(), try Self.address(collection, context), preconditions: Self.preconditions(request))
                return Response(status: .noContent)
            },
        ]
    }

    /// `GET`/`PUT`/`PATCH /family` (the caller's family) and `/settings` (the caller's own account).
    func addSingleton(_ collection: CollectionSpec, perAccount: Bool, to group: RouterGroup<AppRequestContext>) {
        let address: @Sendable (Session) -> ItemAddress = { session in ItemAddress(collection, id: perAccount ? session.accountID : session.spaceID)
        }
        group.resource(
            "\(collection.name)",
            [
                .put: { request, context in
                    let session = try context.requireSession()
                    let body = try await HTTPBodies.json(request, limit: bodyMaxBytes)
                    let answer = try await context.engine(engine).put(
                        session, address(session), body: body, preconditions: Self.preconditions(request))
                    return HTTPBodies.response(json: answer.body, etag: answer.etag)
                },
                .patch: { request, context in
                    let session = try context.requireSession()
                    let patch = try await Self.mergePatch(request, limit: bodyMaxBytes)
                    let answer = try await context.engine(engine).patch(
                        session, address(session), patch: patch, preconditions: Self.preconditions(request))
                    return HTTPBodies.response(json: answer.body, etag: answer.etag)
                },
                .get: { request, context in
                    let session = try context.requireSession()
                    let answer = try await context.engine(engine).get(session, address(session), ifNoneMatch: request.headers[.ifNoneMatch])
                    if answer.notModified { return HTTPBodies.notModified(etag: answer.etag) }
                    return HTTPBodies.response(json: answer.body, etag: answer.etag)
                },
            ])
    }

    /// A PATCH body: `application/merge-patch+json` or `application/json` (or no type), else 415 before it is read.
    static func mergePatch(_ request: Request, limit: Int) async throws -> JSONValue {
        if let type = request.headers[.contentType] {
            let media = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard media == "application/merge-patch+json" || media == "application/json" else {
                throw SyncError.unsupportedMediaType("A PATCH body is application/merge-patch+json or application/json.")
            }
        }
        return try await HTTPBodies.json(request, limit: limit)
    }

    static func address(_ collection: CollectionSpec, _ context: AppRequestContext) throws -> ItemAddress {
        if collection.parentName != nil {
            guard let parentID = context.pathID("id"), let id = context.pathID("childId") else { throw SyncError.notFound() }
            return ItemAddress(collection, parentID: parentID, id: id)
        }
        guard let id = context.pathID("id") else { throw SyncError.notFound() }
        return ItemAddress(collection, id: id)
    }

    /// `If-Match` / `If-None-Match`; a header with an empty value names no entity tag and counts as absent (RFC 9110
    /// §13.1.1 lists are `#entity-tag`, and an empty list asks for nothing).
    static func preconditions(_ request: Request) -> WritePreconditions {
        func header(_ name: HTTPField.Name) -> String? {
            let value = request.headers[values: name].joined(separator: ",")
            return value.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "," }) ? nil : value
        }
        return WritePreconditions(ifMatch: header(.ifMatch), ifNoneMatch: header(.ifNoneMatch))
    }
}
