/// The OpenAPI document of a model (protocol §12): every path the model makes (items, sync endpoints, pages), with
/// the schemas of its items, generated, never copied (`GET /api/v1/openapi.json`, `syncapi model openapi`). The
/// operations every model shares (accounts, group, changes, media) are those of `docs/api/openapi.yaml`.
extension DataModel {
    public func openAPI(version: String) -> JSONValue {
        let registry = CollectionRegistry(self)
        var paths: [(key: String, value: JSONValue)] = []
        var schemas: [(key: String, value: JSONValue)] = [("Problem", Self.problemSchema)]
        for collection in collections {
            guard let spec = registry.named(collection.name) else { continue }
            let type = Self.typeName(collection.name)
            schemas.append((type, itemSchema(collection, spec)))
            schemas.append((type + "Write", writeSchema(collection)))
            let item = Self.ref(type)
            var operations: [(key: String, value: JSONValue)] = [
                (
                    "put",
                    Self.operation(
                        "put\(type)", collection.name, "Create or replace", body: Self.ref(type + "Write"), ok: item,
                        codes: [400, 401, 403, 404, 409, 412, 413])
                ),
                (
                    "patch",
                    Self.operation(
                        "patch\(type)", collection.name, "Edit (JSON Merge Patch)", body: .object([("type", .string("object"))]), ok: item,
                        codes: [400, 401, 403, 404, 409, 412, 413, 415], mergePatch: true)
                ),
                ("get", Self.operation("get\(type)", collection.name, "Read", ok: item, codes: [400, 401, 404], notModified: true)),
            ]
            let path: String
            switch collection.kind {
            case .singleton:
                path = "/api/v1/\(collection.name)"
            case .child:
                path = "/api/v1/\(collection.parent ?? "")/{id}/\(collection.name)/{childId}"
                operations.append(("delete", Self.operation("delete\(type)", collection.name, "Delete", ok: nil, codes: [400, 401, 404, 412])))
            default:
                path = "/api/v1/\(collection.name)/{id}"
                operations.append(("delete", Self.operation("delete\(type)", collection.name, "Delete", ok: nil, codes: [400, 401, 404, 412])))
            }
            var pathItem = operations
            let parameters = Self.pathParameters(path)
            if !parameters.isEmpty { pathItem.insert(("parameters", .array(parameters)), at: 0) }
            paths.append((path, .object(pathItem)))
            // Sync endpoints and pages.
            switch collection.kind {
            case .list where spec.syncEndpoint != nil:
                paths.append(
                    (
                        "/api/v1/\(collection.sync!)",
                        .object([
                            (
                                "get",
                                Self.syncOperation("\(collection.sync!)", collection.name, query: [Self.query("date")], answer: Self.listAnswer(item))
                            )
                        ])
                    ))
            case .paginated:
                var query = [Self.query("date"), Self.query("lastId"), Self.query("nb", integer: 1...500)]
                if let children = collection.children { query.append(Self.query("max\(children)", integer: 0...100)) }
                if let filter = collection.filter { query.append(Self.query("\(filter)s")) }
                paths.append(
                    (
                        "/api/v1/\(collection.sync!)",
                        .object([("get", Self.syncOperation(collection.sync!, collection.name, query: query, answer: Self.pageAnswer(item)))])
                    ))
                paths.append(
                    (
                        "/api/v1/\(collection.name)",
                        .object([
                            ("get", Self.syncOperation("page\(type)", collection.name, query: Array(query.dropFirst()), answer: Self.itemsPage(item)))
                        ])
                    ))
                if let children = collection.children {
                    let childPath = "/api/v1/\(collection.name)/{id}/\(children)"
                    paths.append(
                        (
                            childPath,
                            .object([
                                ("parameters", .array(Self.pathParameters(childPath))),
                                (
                                    "get",
                                    Self.syncOperation(
                                        "page\(Self.typeName(children))", children,
                                        query: [Self.query("lastId"), Self.query("nb", integer: 1...500)],
                                        answer: Self.itemsPage(Self.ref(Self.typeName(children))))
                                ),
                            ])
                        ))
                }
            default:
                break
            }
        }
        for (endpoint, members) in registry.bundles {
            var properties: [(key: String, value: JSONValue)] = [
                ("date", .object([("type", .string("string"))])), ("sync", .object([("type", .string("boolean"))])),
            ]
            for member in members {
                let item = Self.ref(Self.typeName(member.name))
                properties.append(
                    (
                        member.name,
                        member.kind == .fullList
                            ? Self.listChanges(item) : .object([("oneOf", .array([item, .object([("type", .string("null"))])]))])
                    ))
            }
            if members.contains(where: { $0.kind == .singleton(perAccount: false) }) {
                properties.append(("accounts", Self.listChanges(.object([("type", .string("object"))]))))
            }
            let answer: JSONValue = .object([
                ("type", .string("object")), ("required", .array([.string("date"), .string("sync")])), ("properties", .object(properties)),
            ])
            paths.append(
                ("/api/v1/\(endpoint)", .object([("get", Self.syncOperation(endpoint, endpoint, query: [Self.query("date")], answer: answer))])))
        }
        paths.append(
            (
                "/api/v1/model",
                .object([
                    (
                        "get",
                        .object([
                            ("operationId", .string("getModel")), ("summary", .string("The data model this server serves, normalized")),
                            ("security", .array([])),
                            ("responses", .object([("200", Self.jsonResponse("The normalized model.", .object([("type", .string("object"))])))])),
                        ])
                    )
                ])
            ))
        return .object([
            ("openapi", .string("3.1.0")),
            (
                "info",
                .object([
                    ("title", .string("SyncAPI: model \(name)")), ("version", .string(version)),
                    ("description", .string("Generated from the data model \(name) (digest \(digest)).")),
                ])
            ),
            ("security", .array([.object([("bearer", .array([]))])])),
            ("paths", .object(paths)),
            (
                "components",
                .object([
                    ("schemas", .object(schemas)),
                    ("securitySchemes", .object([("bearer", .object([("type", .string("http")), ("scheme", .string("bearer"))]))])),
                ])
            ),
        ])
    }

    static func typeName(_ name: String) -> String { name.prefix(1).uppercased() + name.dropFirst() }
    static func ref(_ type: String) -> JSONValue { .object([("$ref", .string("#/components/schemas/\(type)"))]) }

    static let problemSchema: JSONValue = .object([
        ("type", .string("object")), ("required", .array([.string("type"), .string("title"), .string("status"), .string("code")])),
        (
            "properties",
            .object([
                ("type", .object([("type", .string("string"))])), ("title", .object([("type", .string("string"))])),
                ("status", .object([("type", .string("integer"))])), ("detail", .object([("type", .string("string"))])),
                ("code", .object([("type", .string("string"))])), ("field", .object([("type", .string("string"))])),
            ])
        ),
    ])

    /// The JSON Schema of a field's values (`null` allowed where the field is optional, as answers carry it).
    static func fieldSchema(_ kind: FieldKind, nullable: Bool) -> JSONValue {
        var members: [(key: String, value: JSONValue)]
        switch kind {
        case .string(let maxLength, let choices, let format):
            members = [("type", .string("string")), ("minLength", .number(1)), ("maxLength", .number(Double(maxLength)))]
            if let choices { members = [("type", .string("string")), ("enum", .array(choices.map { .string($0) }))] }
            switch format {
            case "date": members.append(("format", .string("date")))
            case "date-time": members.append(("format", .string("date-time")))
            case "uri": members = [("type", .string("string")), ("minLength", .number(8)), ("maxLength", .number(2048))]
            case "reference": members = [("type", .string("string")), ("pattern", .string("^[A-Za-z0-9._:-]{1,64}$"))]
            default: break
            }
        case .integer(let minimum, let maximum):
            members = [("type", .string("integer")), ("minimum", .number(minimum)), ("maximum", .number(maximum))]
        case .number(let minimum, let maximum):
            members = [("type", .string("number")), ("minimum", .number(minimum)), ("maximum", .number(maximum))]
        case .boolean:
            members = [("type", .string("boolean"))]
        case .array(let items, let maxItems):
            members = [("type", .string("array")), ("items", fieldSchema(items, nullable: false)), ("maxItems", .number(Double(maxItems)))]
        }
        guard nullable, case .string(let type)? = members.first?.value else { return .object(members) }
        members[0] = ("type", .array([.string(type), .string("null")]))
        if let choices = members.firstIndex(where: { $0.key == "enum" }), case .array(let values) = members[choices].value {
            members[choices] = ("enum", .array(values + [.null]))
        }
        return .object(members)
    }

    func itemSchema(_ collection: Collection, _ spec: CollectionSpec) -> JSONValue {
        var properties: [(key: String, value: JSONValue)] = [("id", .object([("type", .string("string"))]))]
        for field in collection.fields {
            properties.append((field.name, Self.fieldSchema(field.type, nullable: !field.required && field.defaultValue == nil)))
        }
        let text: JSONValue = .object([("type", .string("string"))])
        if collection.authored { properties += [("author", text), ("created", text)] }
        if let orderField = collection.orderField { properties.append((orderField, text)) }
        if let children = collection.children { properties.append((children, .object([("type", .string("array"))]))) }
        properties.append(("modified", text))
        return .object([
            ("type", .string("object")), ("required", .array([.string("id"), .string("modified")])), ("properties", .object(properties)),
        ])
    }

    func writeSchema(_ collection: Collection) -> JSONValue {
        var properties: [(key: String, value: JSONValue)] = [("id", .object([("type", .string("string"))]))]
        for field in collection.fields { properties.append((field.name, Self.fieldSchema(field.type, nullable: !field.required))) }
        return .object([
            ("type", .string("object")), ("required", .array(collection.fields.filter(\.required).map { .string($0.name) })),
            ("properties", .object(properties)),
        ])
    }

    static func pathParameters(_ path: String) -> [JSONValue] {
        ["id", "childId"].filter { path.contains("{\($0)}") }.map { name in
            .object([
                ("name", .string(name)), ("in", .string("path")), ("required", .bool(true)),
                ("schema", .object([("type", .string("string")), ("pattern", .string("^[A-Za-z0-9._:-]{1,64}$"))])),
            ])
        }
    }

    static func query(_ name: String, integer range: ClosedRange<Int>? = nil) -> JSONValue {
        let schema: JSONValue =
            range.map {
                .object([("type", .string("integer")), ("minimum", .number(Double($0.lowerBound))), ("maximum", .number(Double($0.upperBound)))])
            }
            ?? .object([("type", .string("string"))])
        return .object([("name", .string(name)), ("in", .string("query")), ("required", .bool(false)), ("schema", schema)])
    }

    static func jsonResponse(_ description: String, _ schema: JSONValue) -> JSONValue {
        .object([("description", .string(description)), ("content", .object([("application/json", .object([("schema", schema)]))]))])
    }

    /// Every error answers problem+json; the status codes a call may answer, then `default` for the rest (503, 429).
    static func errors(_ codes: [Int]) -> [(key: String, value: JSONValue)] {
        let problem: JSONValue = .object([
            ("description", .string("An error (protocol §7).")),
            ("content", .object([("application/problem+json", .object([("schema", ref("Problem"))]))])),
        ])
        return codes.map { (String($0), problem) } + [("default", problem)]
    }

    static func operation(
        _ id: String, _ tag: String, _ summary: String, body: JSONValue? = nil, ok: JSONValue?, codes: [Int], mergePatch: Bool = false,
        notModified: Bool = false
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("operationId", .string(id)), ("tags", .array([.string(tag)])), ("summary", .string(summary)),
        ]
        if let body {
            var content: [(key: String, value: JSONValue)] = [("application/json", .object([("schema", body)]))]
            if mergePatch { content.insert(("application/merge-patch+json", .object([("schema", body)])), at: 0) }
            members.append(("requestBody", .object([("required", .bool(true)), ("content", .object(content))])))
        }
        var responses: [(key: String, value: JSONValue)] = []
        if let ok {
            responses.append(("200", jsonResponse("The item.", ok)))
        } else {
            responses.append(("204", .object([("description", .string("Done."))])))
        }
        if notModified { responses.append(("304", .object([("description", .string("Not modified."))]))) }
        responses += errors(codes)
        members.append(("responses", .object(responses)))
        return .object(members)
    }

    static func syncOperation(_ id: String, _ tag: String, query: [JSONValue], answer: JSONValue) -> JSONValue {
        .object([
            ("operationId", .string(id)), ("tags", .array([.string(tag)])), ("parameters", .array(query)),
            (
                "responses",
                .object(
                    [("200", jsonResponse("The answer.", answer)), ("304", .object([("description", .string("Not modified."))]))]
                        + errors([400, 401, 404]))
            ),
        ])
    }

    static func listChanges(_ item: JSONValue) -> JSONValue {
        .object([
            ("type", .string("object")),
            (
                "properties",
                .object([("updated", .object([("type", .string("array")), ("items", item)])), ("deleted", .object([("type", .string("array"))]))])
            ),
        ])
    }

    static func listAnswer(_ item: JSONValue) -> JSONValue {
        .object([
            ("type", .string("object")), ("required", .array(["date", "sync", "updated", "deleted"].map { .string($0) })),
            (
                "properties",
                .object([
                    ("date", .object([("type", .string("string"))])), ("sync", .object([("type", .string("boolean"))])),
                    ("updated", .object([("type", .string("array")), ("items", item)])), ("deleted", .object([("type", .string("array"))])),
                ])
            ),
        ])
    }

    static func pageAnswer(_ item: JSONValue) -> JSONValue {
        guard case .object(var members) = listAnswer(item), let index = members.firstIndex(where: { $0.key == "properties" }),
            case .object(var properties) = members[index].value
        else { return listAnswer(item) }
        properties += [("crop", .object([("type", .string("boolean"))])), ("nomore", .object([("type", .string("boolean"))]))]
        members[index] = ("properties", .object(properties))
        return .object(members)
    }

    static func itemsPage(_ item: JSONValue) -> JSONValue {
        .object([
            ("type", .string("object")),
            (
                "properties",
                .object([("items", .object([("type", .string("array")), ("items", item)])), ("nomore", .object([("type", .string("boolean"))]))])
            ),
        ])
    }
}
