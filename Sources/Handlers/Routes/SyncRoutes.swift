import Hummingbird
import SyncAPI

/// The delta-sync endpoints of the registry: `ctcsync`, `evtsync`, `plcsync` (protocol §3).
struct SyncRoutes {
    let engine: SyncEngine

    func add(to group: RouterGroup<AppRequestContext>) {
        for collection in Collections.synced {
            guard let endpoint = collection.syncEndpoint, collection.kind == .fullList else { continue }
            group.resource(
                "\(endpoint)",
                [
                    .get: { request, context in
                        let query = try SyncQuery(request, allowed: ["date"])
                        let answer = try await engine.fullListSync(
                            try context.requireSession(), collection, date: query.values["date"],
                            ifNoneMatch: request.headers[.ifNoneMatch])
                        let etag = "\"\(answer.date)\""
                        if answer.notModified { return HTTPBodies.notModified(etag: etag) }
                        return HTTPBodies.response(json: answer.body, etag: etag)
                    }
                ])
        }
    }
}

/// The query parameters of a sync call, checked against the ones the endpoint takes.
struct SyncQuery {
    let values: [String: String]

    /// Rejects unknown and repeated parameters with 400 `invalid_parameter`.
    init(_ request: Request, allowed: Set<String>) throws {
        var values: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            let name = String(name)
            guard allowed.contains(name) else {
                throw SyncError.invalidParameter(name, "Unknown parameter \"\(name)\".")
            }
            guard values[name] == nil else { throw SyncError.invalidParameter(name, "Parameter \"\(name)\" is repeated.") }
            values[name] = String(value)
        }
        self.values = values
    }
}
