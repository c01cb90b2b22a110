import SyncAPI

/// The paths a model's collections make, in the model file's order: each collection's item path, then its sync
/// endpoint and pages; the endpoints that answer singletons together (protocol §5, §12) after them. Every answer
/// refers to the shared parameters, headers and responses of the base document (`models/openapi-base.yaml`).
struct OpenAPICollections {
    let model: DataModel
    let registry: CollectionRegistry
    private(set) var paths: [(key: String, value: JSONValue)] = []
    private(set) var schemas: [(key: String, value: JSONValue)] = []
    /// `/verify` takes one `<paginated>LastId` per paginated collection, and the filter's parameter.
    private(set) var verifyParameters: [JSONValue] = []

    init(_ model: DataModel) {
        self.model = model
        registry = CollectionRegistry(model)
        for collection in model.collections {
            guard let spec = registry.named(collection.name) else { continue }
            let first = paths.count
            defer { if spec.access.read > .reader { paths[first...].forbidReads() } }
            schemas += OpenAPISchemas.item(collection, spec, model: model)
            addItemPath(collection, spec)
            switch collection.kind {
            case .list
            where collection.sync.map({ endpoint in model.collections.allSatisfy { $0.kind != .singleton || $0.sync != endpoint } })
                ?? false:
                addListSync(collection)
            case .paginated:
                addPaginated(collection, spec)
            default: break
            }
        }
        for (endpoint, members) in registry.bundles { addBundle(endpoint, members) }
    }

    // MARK: References

    static func ref(_ kind: String, _ name: String) -> JSONValue { ["$ref": .string("#/components/\(kind)/\(name)")] }
    static func schema(_ name: String) -> JSONValue { ref("schemas", name) }
    static func response(_ name: String) -> JSONValue { ref("responses", name) }
    static func parameter(_ name: String) -> JSONValue { ref("parameters", name) }

    static func problem(_ description: String) -> JSONValue {
        ["description": .string(description), "content": ["application/problem+json": ["schema": schema("Problem")]]]
    }

    static func answer(_ description: String, _ body: JSONValue, etag: String?) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("description", .string(description))]
        if let etag { members.append(("headers", ["ETag": ref("headers", etag)])) }
        members.append(("content", ["application/json": ["schema": body]]))
        return .object(members)
    }

    static func operation(
        _ id: String, tag: String, summary: String, description: String, parameters: [JSONValue] = [], body: JSONValue? = nil,
        responses: [(key: String, value: JSONValue)]
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("operationId", .string(id)), ("tags", [.string(tag)]), ("summary", .string(summary)), ("description", .string(description)),
        ]
        if !parameters.isEmpty { members.append(("parameters", .array(parameters))) }
        if let body { members.append(("requestBody", body)) }
        members.append(("responses", .object(responses)))
        return .object(members)
    }

    static func pathParameter(_ name: String, _ description: String, schema: String = "Id") -> JSONValue {
        ["name": .string(name), "in": "path", "required": true, "schema": Self.schema(schema), "description": .string(description)]
    }

    static let mergePatchBody: JSONValue = [
        "required": true,
        "content": [
            "application/merge-patch+json": ["schema": schema("MergePatch")], "application/json": ["schema": schema("MergePatch")],
        ],
    ]

    static let unsupportedPatch = problem(
        "415 `unsupported_media_type`: a body that is not `application/merge-patch+json` or `application/json`.")

    // MARK: Item paths

    mutating func addItemPath(_ collection: DataModel.Collection, _ spec: CollectionSpec) {
        let names = OpenAPISchemas.Names(collection.name)
        let tag = collection.name
        let singleton = collection.kind == .singleton
        var item: [(key: String, value: JSONValue)] = []
        let path: String
        var notFound: JSONValue = Self.response("NotFound")
        switch collection.kind {
        case .singleton:
            path = "/api/v1/\(collection.name)"
            let whose = collection.scope == "account" ? "the caller's own" : "the caller's family's"
            item.append(
                (
                    "description",
                    .string(
                        "\(whose.prefix(1).uppercased() + whose.dropFirst()) `\(collection.name)`, a singleton (protocol §5, §12): its `id` is the \(collection.scope == "account" ? "account" : "family") id, and it always exists, with its defaults until written. Only `GET`, `PUT` and `PATCH`: `DELETE` (like `POST`) answers 405 `method_not_allowed`, after authentication."
                    )
                ))
        case .child:
            let parent = collection.parent ?? ""
            path = "/api/v1/\(parent)/{id}/\(collection.name)/{childId}"
            item.append(
                (
                    "parameters",
                    [
                        Self.pathParameter(
                            "id",
                            "Id of the parent item of `\(parent)`. A malformed, missing or deleted parent answers 404 `not_found`."),
                        Self.pathParameter("childId", "The item id, chosen by the client (400 `invalid_id` when malformed)."),
                    ]
                ))
            notFound = Self.problem("404 `not_found`: the parent item of `\(parent)` is missing or deleted.")
        default:
            path = "/api/v1/\(collection.name)/{id}"
            item.append(("parameters", [Self.parameter("ItemIdPath")]))
        }
        let server = OpenAPISchemas.serverSetText(collection)
        var putText =
            singleton
            ? "Replaces the singleton. Server-set members in the body are ignored; a body `id` must be the singleton's id (else 400 `invalid_id`). `If-Match` is honoured (412 `precondition_failed`); the singleton always exists, so `If-None-Match: *` answers 412. An identical PUT changes nothing."
            : "Upsert. A PUT on a deleted id creates it anew. Server-set members in the body are ignored."
        if !server.isEmpty { putText += " " + server }
        if let filter = collection.filter {
            putText +=
                " `\(filter)` is immutable while the item lives (409 `type_immutable`, `field` `\(filter)`); an item created anew after a delete may take another value."
        }
        if collection.kind == .child { putText += " 404 when the parent is missing or deleted." }
        var putResponses: [(key: String, value: JSONValue)] = [
            (
                "200",
                Self.answer(
                    "The stored item (unchanged when the content, after defaults, equals what is stored: retries are free).", Self.schema(names.item),
                    etag: "ItemETag")
            ),
            ("400", Self.response("BadRequest")), ("401", Self.response("Unauthorized")),
        ]
        if collection.kind == .child { putResponses.append(("404", notFound)) }
        putResponses.append(("403", Self.response("QuotaExceeded")))
        if let filter = collection.filter {
            putResponses.append(("409", Self.problem("409 `type_immutable` (`field`: `\(filter)`): a live item's `\(filter)` cannot change.")))
        }
        putResponses += [
            ("412", Self.response("PreconditionFailed")), ("413", Self.response("PayloadTooLarge")), ("503", Self.response("Unavailable")),
        ]
        item.append(
            (
                "put",
                Self.operation(
                    "put\(names.type)", tag: tag, summary: "Create or replace an item of `\(collection.name)`", description: putText,
                    parameters: singleton ? [Self.parameter("IfMatch")] : [Self.parameter("IfMatch"), Self.parameter("IfNoneMatchWrite")],
                    body: ["required": true, "content": ["application/json": ["schema": Self.schema(names.write)]]], responses: putResponses)
            ))
        var patchResponses: [(key: String, value: JSONValue)] = [
            ("200", Self.answer("The stored item after the patch.", Self.schema(names.item), etag: "ItemETag")),
            ("400", Self.response("BadRequest")), ("401", Self.response("Unauthorized")), ("403", Self.response("QuotaExceeded")),
            ("404", Self.response("NotFound")),
        ]
        if let filter = collection.filter {
            patchResponses.append(("409", Self.problem("409 `type_immutable` (`field`: `\(filter)`): a live item's `\(filter)` cannot change.")))
        }
        patchResponses += [
            ("412", Self.response("PreconditionFailed")), ("413", Self.response("PayloadTooLarge")), ("415", Self.unsupportedPatch),
            ("503", Self.response("Unavailable")),
        ]
        item.append(
            (
                "patch",
                Self.operation(
                    "patch\(names.type)", tag: tag, summary: "Edit an item of `\(collection.name)` (JSON Merge Patch)",
                    description:
                        "JSON Merge Patch (RFC 7396, protocol §2) on the stored item: members of the body set those fields, `null` removes an optional field (it takes its default), fields the body does not name keep their stored value. The result is validated as a whole, like a PUT body; server-set members are ignored. "
                        + (singleton
                            ? "A singleton always exists: the patch applies to its current content."
                            : "PATCH never creates: a missing or deleted item is 404.")
                        + " A patch that changes nothing changes nothing (same `ETag`).",
                    parameters: [Self.parameter("IfMatch")], body: Self.mergePatchBody, responses: patchResponses)
            ))
        var getResponses: [(key: String, value: JSONValue)] = [
            ("200", Self.answer("The item.", Self.schema(names.item), etag: "ItemETag")), ("304", Self.response("ItemNotModified")),
        ]
        if !singleton { getResponses.append(("400", Self.response("BadRequest"))) }
        getResponses.append(("401", Self.response("Unauthorized")))
        if !singleton { getResponses.append(("404", Self.response("NotFound"))) }
        getResponses.append(("503", Self.response("Unavailable")))
        item.append(
            (
                "get",
                Self.operation(
                    "get\(names.type)", tag: tag, summary: "Read an item of `\(collection.name)`",
                    description: singleton
                        ? "The singleton, with its defaults until written."
                        : "404 for a missing or deleted id" + (collection.kind == .child ? ", and when the parent is missing or deleted." : "."),
                    parameters: [Self.parameter("IfNoneMatchRead")], responses: getResponses)
            ))
        if !singleton {
            var deleteResponses: [(key: String, value: JSONValue)] = [
                ("204", Self.response("NoContent")), ("400", Self.response("BadRequest")), ("401", Self.response("Unauthorized")),
            ]
            if collection.kind == .child { deleteResponses.append(("404", notFound)) }
            deleteResponses += [("412", Self.response("PreconditionFailed")), ("503", Self.response("Unavailable"))]
            var text = "Idempotent: 204 also for an id already deleted or never created (unless `If-Match` is sent)."
            if let children = collection.children { text += " Deleting an item deletes its `\(children)`." }
            if collection.kind == .child {
                text += " Deleting an item changes its parent (new `modified`). 404 when the parent is missing or deleted."
            }
            item.append(
                (
                    "delete",
                    Self.operation(
                        "delete\(names.type)", tag: tag, summary: "Delete an item of `\(collection.name)`", description: text,
                        parameters: [Self.parameter("IfMatch")], responses: deleteResponses)
                ))
        }
        paths.append((path, .object(item)))
    }

    // MARK: Sync endpoints and pages

    mutating func addListSync(_ collection: DataModel.Collection) {
        guard let endpoint = collection.sync else { return }
        let answer = OpenAPISchemas.Names(endpoint).answer
        schemas.append((answer, OpenAPISchemas.listAnswer(collection.name, item: OpenAPISchemas.Names(collection.name).item)))
        paths.append(
            (
                "/api/v1/\(endpoint)",
                [
                    "get": Self.operation(
                        endpoint, tag: "sync", summary: "Delta sync of `\(collection.name)`",
                        description:
                            "Full-list delta sync (protocol §3). Only `date` is accepted: an unknown or repeated query parameter answers 400 `invalid_parameter`. Exactness: a client that applies every answer holds exactly the server's live items as of the new date, whatever writes ran concurrently.",
                        parameters: [Self.parameter("Date"), Self.parameter("IfNoneMatchSync")],
                        responses: [
                            ("200", Self.answer("The delta since `date`.", Self.schema(answer), etag: "SyncETag")),
                            ("304", Self.response("SyncNotModified")), ("400", Self.response("InvalidQuery")),
                            ("401", Self.response("Unauthorized")), ("429", Self.response("SnapshotBusy")),
                            ("503", Self.response("Unavailable")),
                        ])
                ]
            ))
    }

    static func childCap(_ children: String) -> JSONValue {
        [
            "name": .string("max\(children)"), "in": "query", "required": false,
            "schema": ["type": "integer", "minimum": 0, "maximum": 100, "default": 10],
            "description": .string(
                "Newest `\(children)` carried in each item, an integer from 0 to 100 (400 `invalid_parameter` otherwise)."),
        ]
    }

    static func filterParameter(_ collection: DataModel.Collection, _ spec: CollectionSpec) -> JSONValue? {
        guard let filter = collection.filter, let field = spec.schema.fields.first(where: { $0.name == filter }),
            case .oneOf(let choices) = field.type
        else { return nil }
        return [
            "name": .string(filter + "s"), "in": "query", "required": false, "style": "form", "explode": false,
            "schema": ["type": "array", "minItems": 1, "items": ["type": "string", "enum": .array(choices.map { .string($0) })]],
            "description": .string(
                "Comma list of `\(filter)` values to keep (default: all). A value given twice counts once; an empty entry or another word answers 400 `invalid_parameter`. The filter applies to `updated`/`items` and `nomore`, never to `deleted` (which in the sync answer also lists items that changed after `date` and are now outside the filter)."
            ),
        ]
    }

    mutating func addPaginated(_ collection: DataModel.Collection, _ spec: CollectionSpec) {
        guard let endpoint = collection.sync else { return }
        let names = OpenAPISchemas.Names(collection.name)
        let answer = OpenAPISchemas.Names(endpoint).answer
        var extra: [JSONValue] = []
        if let children = collection.children { extra.append(Self.childCap(children)) }
        let filter = Self.filterParameter(collection, spec)
        if let filter { extra.append(filter) }
        verifyParameters.append(
            [
                "name": .string("\(collection.name)LastId"), "in": "query", "required": false, "schema": Self.schema("Id"),
                "description": .string(
                    "Includes `\(collection.name)` in the answer, covering the items at or above this one in sort order (the part the client holds); an id the server never knew is 404."
                ),
            ])
        if let filter { verifyParameters.append(filter) }
        let carried = collection.children.map { " Each item carries its newest `\($0)` (newest first) and its own `nomore`." } ?? ""
        // docs/paginated-sync.md, "Answers end at a byte budget".
        let cut =
            " An answer holds at most 4 MiB of item bodies\(collection.children.map { ", and as much of `\($0)`" } ?? ""): a list cut there carries fewer than `nb` items and `nomore` false\(collection.children.map { ", an item whose `\($0)` were cut fewer of them and its own `nomore` false" } ?? "")."
        let syncCut = " Changes that do not fit it are answered as a cropped top page."
        let takes = (["date", "lastId", "nb"] + collection.children.map { ["max\($0)"] }.orEmpty + collection.filter.map { [$0 + "s"] }.orEmpty)
            .map { "`\($0)`" }.joined(separator: ", ")
        let pageTakes = (["lastId", "nb"] + collection.children.map { ["max\($0)"] }.orEmpty + collection.filter.map { [$0 + "s"] }.orEmpty)
            .map { "`\($0)`" }.joined(separator: ", ")
        schemas.append((answer, OpenAPISchemas.pageSyncAnswer(collection.name, item: names.withChildren(collection))))
        paths.append(
            (
                "/api/v1/\(endpoint)",
                [
                    "get": Self.operation(
                        endpoint, tag: "sync", summary: "Delta sync of `\(collection.name)`",
                        description:
                            "Paginated delta sync (protocol §4; docs/paginated-sync.md). The client holds the top of the sorted list down to its last item `lastId`. Without `date` (or with a `date`/`lastId` the server cannot answer exactly): `sync` false, `updated` the first `nb` items, `deleted` empty. With an answerable `date`: `sync` true and `updated` the items at or above `lastId` (all, without `lastId`) changed after it, in sort order; when they are more than `nb`, `crop` is true and `updated` is a fresh top page of `nb` items, changed or not. `deleted` lists every id of the list deleted after `date`, never paginated.\(carried)\(cut)\(syncCut) The answer carries `ETag: \"<date>\"`; `If-None-Match` naming the current date answers 304. Takes \(takes). Any other query parameter, or one given twice, answers 400 `invalid_parameter` naming it in `field`.",
                        parameters: [Self.parameter("Date"), Self.parameter("SyncLastId"), Self.parameter("Nb")] + extra + [
                            Self.parameter("IfNoneMatchSync")
                        ],
                        responses: [
                            ("200", Self.answer("The delta since `date`.", Self.schema(answer), etag: "SyncETag")),
                            ("304", Self.response("SyncNotModified")), ("400", Self.response("InvalidQuery")),
                            ("401", Self.response("Unauthorized")), ("503", Self.response("Unavailable")),
                        ])
                ]
            ))
        schemas.append((names.page, OpenAPISchemas.page(collection.name, item: names.withChildren(collection))))
        paths.append(
            (
                "/api/v1/\(collection.name)",
                [
                    "get": Self.operation(
                        "list\(names.type)", tag: collection.name, summary: "Next items of `\(collection.name)`, in sort order",
                        description:
                            "Pagination (protocol §4): `{\"items\", \"nomore\"}` with the next `nb` items strictly below `lastId` (from the top without it).\(carried) `nomore` is true when no item is left below the page.\(cut) Takes \(pageTakes). Any other query parameter, or one given twice, answers 400 `invalid_parameter` naming it in `field`.",
                        parameters: [Self.parameter("PageLastId"), Self.parameter("Nb")] + extra,
                        responses: [
                            ("200", Self.answer("A page.", Self.schema(names.page), etag: nil)), ("400", Self.response("InvalidQuery")),
                            ("401", Self.response("Unauthorized")),
                            ("404", Self.problem("404 `not_found`: `lastId` names no item of `\(collection.name)`, live or deleted.")),
                            ("503", Self.response("Unavailable")),
                        ])
                ]
            ))
        guard let children = collection.children else { return }
        let child = OpenAPISchemas.Names(children)
        schemas.append((child.page, OpenAPISchemas.page(children, item: child.item)))
        paths.append(
            (
                "/api/v1/\(collection.name)/{id}/\(children)",
                [
                    "get": Self.operation(
                        "list\(child.type)", tag: children, summary: "Next `\(children)` of an item of `\(collection.name)`, newest first",
                        description:
                            "Pagination of an item's `\(children)` (protocol §4): `{\"items\", \"nomore\"}` with the next `nb` items strictly below `lastId` (from the newest without it), newest first (`created` desc, then `id` desc). At most 4 MiB of item bodies: a page cut there carries fewer than `nb` items and `nomore` false. Takes `lastId` and `nb`. Any other query parameter, or one given twice, answers 400 `invalid_parameter` naming it in `field`. 404 when the parent is missing or deleted, or when `lastId` names no item of it, live or deleted.",
                        parameters: [
                            Self.pathParameter(
                                "id", "Id of the parent item of `\(collection.name)`. A malformed, missing or deleted parent answers 404 `not_found`."
                            ),
                            Self.parameter("PageLastId"), Self.parameter("Nb"),
                        ],
                        responses: [
                            ("200", Self.answer("A page.", Self.schema(child.page), etag: nil)), ("400", Self.response("InvalidQuery")),
                            ("401", Self.response("Unauthorized")),
                            ("404", Self.problem("404 `not_found`: the parent is missing or deleted, or `lastId` names no item of it.")),
                            ("503", Self.response("Unavailable")),
                        ])
                ]
            ))
    }

    mutating func addBundle(_ endpoint: String, _ members: [CollectionSpec]) {
        let answer = OpenAPISchemas.Names(endpoint).answer
        let collections = members.compactMap { model.collection($0.name) }
        schemas.append(
            (
                answer,
                OpenAPISchemas.bundleAnswer(
                    endpoint, collections, accounts: registry.familySingleton.map { spec in members.contains { $0.name == spec.name } } ?? false)
            ))
        let hasList = members.contains { $0.kind == .fullList }
        var responses: [(key: String, value: JSONValue)] = [
            ("200", Self.answer("The changes since `date`.", Self.schema(answer), etag: "SyncETag")), ("304", Self.response("SyncNotModified")),
            ("400", Self.response("InvalidQuery")), ("401", Self.response("Unauthorized")),
        ]
        if hasList { responses.append(("429", Self.response("SnapshotBusy"))) }
        responses.append(("503", Self.response("Unavailable")))
        paths.append(
            (
                "/api/v1/\(endpoint)",
                [
                    "get": Self.operation(
                        endpoint, tag: "sync", summary: "Singleton sync: " + collections.map { "`\($0.name)`" }.joined(separator: ", "),
                        description:
                            "Singleton sync (protocol §5, §12). Only `date` is accepted (400 `invalid_parameter` for any other query parameter). Each singleton is `null` when unchanged since `date`; each list answers `{\"updated\", \"deleted\"}`. Without a usable `date`, `sync` is false and every member is present in full.",
                        parameters: [Self.parameter("Date"), Self.parameter("IfNoneMatchSync")], responses: responses)
                ]
            ))
    }
}

extension Optional where Wrapped == [String] {
    var orEmpty: [String] { self ?? [] }
}

extension ArraySlice<(key: String, value: JSONValue)> {
    /// Adds 403 `forbidden` to the reads of these paths: their collection's `access.read` is above `reader`.
    mutating func forbidReads() {
        for index in indices {
            self[index].value.update("get") { operation in
                operation.update("responses") { responses in
                    responses.set("403", OpenAPICollections.response("Forbidden"))
                }
            }
        }
    }
}
