import Hummingbird
import SyncAPI

/// The sync endpoints of the registry: full lists (`ctcsync`, `evtsync`, `plcsync`, protocol §3), paginated lists
/// (`msgsyncthread`, `wallsync`, §4) and their pagination APIs (`/threads`, `/wall`, children pages).
struct SyncRoutes {
    let engine: SyncEngine

    func add(to group: RouterGroup<AppRequestContext>) {
        for collection in engine.collections.writable {
            switch collection.kind {
            case .fullList:
                // Full lists without an endpoint of their own (members) travel in familysync.
                guard let endpoint = collection.syncEndpoint else { continue }
                group.resource(
                    "\(endpoint)",
                    [
                        .get: { request, context in
                            let query = try SyncQuery(request, allowed: ["date"])
                            let answer = try await context.engine(engine).fullListSync(
                                try context.requireSession(), collection, date: query.values["date"],
                                ifNoneMatch: request.headers[.ifNoneMatch])
                            return Self.response(answer, to: request)
                        }
                    ])
            case .paginated:
                let childLimit = collection.childName.map { "max\($0)" }
                let filter = collection.filterField.map { "\($0)s" }
                if let endpoint = collection.syncEndpoint {
                    group.resource(
                        "\(endpoint)",
                        [
                            .get: { request, context in
                                let query = try SyncQuery(request, allowed: Set(["date", "lastId", "nb", childLimit, filter].compactMap { $0 }))
                                let parameters = try query.pageParameters(collection, childLimit: childLimit, filter: filter)
                                let answer = try await context.engine(engine).pagedSync(
                                    try context.requireSession(), collection, parameters, ifNoneMatch: request.headers[.ifNoneMatch])
                                return Self.response(answer, to: request)
                            }
                        ])
                }
                group.resource(
                    "\(collection.name)",
                    [
                        .get: { request, context in
                            let query = try SyncQuery(request, allowed: Set(["lastId", "nb", childLimit, filter].compactMap { $0 }))
                            let parameters = try query.pageParameters(collection, childLimit: childLimit, filter: filter)
                            let body = try await context.engine(engine).page(
                                try context.requireSession(), collection, parentID: nil, parameters)
                            return HTTPBodies.response(json: body)
                        }
                    ])
            case .child(let parent):
                group.resource(
                    "\(parent)/:id/\(collection.name)",
                    [
                        .get: { request, context in
                            let query = try SyncQuery(request, allowed: ["lastId", "nb"])
                            let parameters = try query.pageParameters(collection, childLimit: nil, filter: nil)
                            let body = try await context.engine(engine).page(
                                try context.requireSession(), collection, parentID: context.pathID("id"), parameters)
                            return HTTPBodies.response(json: body)
                        }
                    ])
            case .singleton:
                continue
            }
        }
        // An endpoint carries singletons and lists together (protocol §5: `familysync`).
        for (endpoint, _) in engine.collections.bundles {
            group.resource(
                "\(endpoint)",
                [
                    .get: { request, context in
                        let query = try SyncQuery(request, allowed: ["date"])
                        let answer = try await context.engine(engine).bundleSync(
                            try context.requireSession(), endpoint: endpoint, date: query.values["date"],
                            ifNoneMatch: request.headers[.ifNoneMatch])
                        return Self.response(answer, to: request)
                    }
                ])
        }
        addVerify(to: group)
    }

    /// `GET /verify` (protocol §11): a count and a digest per list, for a client to prove its replica exact.
    func addVerify(to group: RouterGroup<AppRequestContext>) {
        group.resource(
            "verify",
            [
                .get: { request, context in
                    // Per paginated list: `<name>LastId`, and its filter as on its sync endpoint (`types`).
                    let paginated = engine.collections.paginated
                    let filters = paginated.compactMap { spec in spec.filterField.map { (spec, "\($0)s") } }
                    let query = try SyncQuery(request, allowed: Set(paginated.map { "\($0.name)LastId" } + filters.map(\.1)))
                    var parameters = VerifyParameters()
                    for spec in paginated {
                        let name = "\(spec.name)LastId"
                        guard let id = query.values[name] else { continue }
                        guard ItemID.isValid(id) else { throw SyncError.invalidParameter(name, "\(name) is not a valid id.") }
                        parameters.lastIds[spec.name] = id
                    }
                    for (spec, filter) in filters {
                        parameters.filters[spec.name] = try query.pageParameters(spec, childLimit: nil, filter: filter).types
                    }
                    return HTTPBodies.response(json: try await context.engine(engine).verify(try context.requireSession(), parameters))
                }
            ])
    }

    /// A sync answer, or 304 when `If-None-Match` named its date; the ETag is the date of sync.
    static func response(_ answer: SyncAnswer, to request: Request) -> Response {
        let etag = "\"\(answer.date)\""
        switch answer.content {
        case .notModified:
            return HTTPBodies.notModified(etag: etag)
        case .whole(let body):
            return HTTPBodies.response(json: body, etag: etag)
        case .cursor(let cursor):
            // Read as it is written, in the writing task (a group's, which holds the snapshot).
            let headers: HTTPFields = [.contentType: "application/json", .eTag: etag]
            if request.method == .head { return Response(status: .ok, headers: headers) }
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    try await cursor { chunk in try await writer.write(chunk) }
                    try await writer.finish(nil)
                })
        case .stream(let stream):
            // HEAD drops the body: the read behind it stops at once.
            if request.method == .head { stream.cancel() }
            return HTTPBodies.response(json: stream, etag: etag)
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

    /// An integer parameter within a range, or its default when absent.
    func integer(_ name: String, in range: ClosedRange<Int>, default value: Int) throws -> Int {
        guard let text = values[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw SyncError.invalidParameter(name, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound).")
        }
        return number
    }

    /// `date`, `lastId`, `nb`, the children limit and the filter of a paginated call (protocol §4).
    func pageParameters(_ collection: CollectionSpec, childLimit: String?, filter: String?) throws -> PageParameters {
        var parameters = PageParameters()
        parameters.date = values["date"]
        if let lastId = values["lastId"] {
            guard ItemID.isValid(lastId) else { throw SyncError.invalidParameter("lastId", "lastId is not a valid id.") }
            parameters.lastId = lastId
        }
        parameters.nb = try integer("nb", in: 1...500, default: 20)
        if let childLimit { parameters.maxChildren = try integer(childLimit, in: 0...100, default: 10) }
        if let filter, let text = values[filter],
            case .oneOf(let allowed)? = collection.schema.fields.first(where: {
                $0.name == collection.filterField
            })?.type
        {
            let types = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !types.isEmpty, types.allSatisfy(allowed.contains) else {
                throw SyncError.invalidParameter(filter, "\(filter) is a comma list of \(allowed.joined(separator: ", ")).")
            }
            parameters.types = Array(Set(types)).sorted()
        }
        return parameters
    }
}
