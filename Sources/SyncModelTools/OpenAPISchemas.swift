import SyncAPI

/// The JSON Schemas of a model's items and answers, from the same field specifications the server validates with
/// (`CollectionSpec.schema`), so the document states exactly the limits the server enforces.
enum OpenAPISchemas {
    /// Schema names of one collection or endpoint: `contacts` → `Contacts`, `ContactsWrite`, `ContactsPage`.
    struct Names {
        let type: String
        init(_ name: String) { type = name.prefix(1).uppercased() + name.dropFirst() }
        var item: String { type }
        var write: String { type + "Write" }
        var page: String { type + "Page" }
        var answer: String { type + "Answer" }
        /// A paginated item as pages and sync answers carry it: with its newest children and their `nomore`.
        func withChildren(_ collection: DataModel.Collection) -> String {
            collection.children.map { type + "With" + Names($0).type } ?? type
        }
    }

    static func schema(_ name: String) -> JSONValue { OpenAPICollections.schema(name) }
    static let null: JSONValue = ["type": "null"]

    /// A value of the field's type, as the server validates it (strings are never empty; lengths count scalars).
    static func value(_ type: FieldType) -> JSONValue {
        func number(_ kind: JSONValue, _ range: ClosedRange<Double>) -> JSONValue {
            ["type": kind, "minimum": .number(range.lowerBound), "maximum": .number(range.upperBound)]
        }
        func string(_ maxLength: Int) -> JSONValue { ["type": "string", "minLength": 1, "maxLength": .number(Double(maxLength))] }
        func list(_ items: JSONValue, _ maxItems: Int) -> JSONValue { ["type": "array", "maxItems": .number(Double(maxItems)), "items": items] }
        switch type {
        case .string(let maxLength): return string(maxLength)
        case .reference: return schema("Id")
        case .stringList(let maxLength, let maxItems): return list(string(maxLength), maxItems)
        case .referenceList(let maxItems): return list(schema("Id"), maxItems)
        case .choiceList(let choices, let maxItems): return list(["type": "string", "enum": .array(choices.map { .string($0) })], maxItems)
        case .integer(let range): return number("integer", range)
        case .bool: return ["type": "boolean"]
        case .dateTime: return schema("DateTime")
        case .date: return ["type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "maxLength": 10]
        case .number(let range): return number("number", range)
        case .url: return schema("Url")
        case .oneOf(let choices): return ["type": "string", "enum": .array(choices.map { .string($0) })]
        }
    }

    static func isList(_ type: FieldType) -> Bool {
        switch type {
        case .stringList, .referenceList, .choiceList: true
        default: false
        }
    }

    static func field(_ field: FieldSpec, nullable: Bool) -> JSONValue {
        var schema = value(field.type)
        if nullable { schema = ["anyOf": [schema, null]] }
        if field.defaultValue != .null { schema.set("default", field.defaultValue) }
        return schema
    }

    static func described(_ base: JSONValue, _ text: String) -> JSONValue { ["allOf": [base], "description": .string(text)] }

    /// What the server sets on items of this collection, in one sentence (empty when only `modified`).
    static func serverSetText(_ collection: DataModel.Collection) -> String {
        var parts: [String] = []
        if collection.authored {
            parts.append(
                "`author` is the caller's account on creation and is kept on edits by others; `created` is the server's clock at the first write (anew after a delete)."
            )
        }
        if let orderField = collection.orderField, let children = collection.children {
            parts.append(
                "`\(orderField)` is the newest `created` of any item ever posted in its `\(children)`, else the item's own creation time; it never goes down."
            )
        }
        return parts.joined(separator: " ")
    }

    static func idSchema(_ collection: DataModel.Collection) -> JSONValue {
        switch (collection.kind, collection.scope) {
        case (.singleton, "account"): described(schema("AccountId"), "The account id.")
        case (.singleton, _): described(schema("FamilyId"), "The family id.")
        default: schema("Id")
        }
    }

    /// The answer schema, the write body schema and (paginated with children) the item with its children.
    static func item(_ collection: DataModel.Collection, _ spec: CollectionSpec, model: DataModel) -> [(key: String, value: JSONValue)] {
        let names = Names(collection.name)
        let fields = spec.schema.fields
        var properties: [(key: String, value: JSONValue)] = [("id", idSchema(collection))]
        for f in fields { properties.append((f.name, field(f, nullable: !f.required && f.defaultValue == .null && !isList(f.type)))) }
        if collection.authored {
            properties.append(("author", described(schema("AccountId"), "Server-set: the account that created the item; edits by others keep it.")))
            properties.append(("created", described(schema("Timestamp"), "Server-set at the first write (anew after a delete).")))
        }
        if let orderField = collection.orderField {
            properties.append((orderField, described(schema("Timestamp"), "Server-set; the sort key. " + serverSetText(collection))))
        }
        properties.append(("modified", described(schema("Timestamp"), "Set by the server at every change; always the last member.")))
        let kind =
            switch collection.kind {
            case .list: "a full list synced by `\(collection.sync ?? "")` (protocol §3)"
            case .paginated: "a paginated list synced by `\(collection.sync ?? "")` (protocol §4)"
            case .child: "a child of `\(collection.parent ?? "")`, newest first (protocol §4)"
            case .singleton: "a singleton per \(collection.scope ?? "family") synced by `\(collection.sync ?? "")` (protocol §5)"
            }
        let order =
            "Every answer carries every member listed here, in this order: `id` first, the declared fields with `null` for an absent optional scalar, `[]` for an absent list and defaults applied, then server-set fields, then `modified` last."
        var out: [(key: String, value: JSONValue)] = [
            (
                names.item,
                [
                    "type": "object",
                    "description": .string(
                        "An item of `\(collection.name)`, \(kind)\(collection.children.map { ", as `PUT`/`GET` answer it (without its `\($0)`)" } ?? ""). \(order)"
                    ),
                    "required": .array(properties.map { .string($0.key) }), "properties": .object(properties), "additionalProperties": false,
                ]
            )
        ]
        if let children = collection.children {
            let childType = Names(children).item
            let childrenSchema: JSONValue = [
                "type": "array", "maxItems": 100, "items": schema(childType),
                "description": .string("The item's newest `\(children)`, newest first, at most `max\(children)`."),
            ]
            let nomore: JSONValue = ["type": "boolean", "description": .string("True when the item has no older `\(children)` than those carried.")]
            let withChildren = properties + [(key: children, value: childrenSchema), (key: "nomore", value: nomore)]
            out.append(
                (
                    names.withChildren(collection),
                    [
                        "type": "object",
                        "description": .string(
                            "An item of `\(collection.name)` as its sync answer and pages carry it: the members of `\(names.item)` in the same order, then `\(children)` and `nomore` after `modified`."
                        ),
                        "required": .array(withChildren.map { .string($0.key) }), "properties": .object(withChildren),
                        "additionalProperties": false,
                    ]
                ))
        }
        out.append((names.write, write(collection, spec)))
        return out
    }

    static func write(_ collection: DataModel.Collection, _ spec: CollectionSpec) -> JSONValue {
        let fields = spec.schema.fields
        let idText =
            switch (collection.kind, collection.scope) {
            case (.singleton, "account"): "Optional; when sent it must equal the caller's account id (else 400 `invalid_id`)."
            case (.singleton, _): "Optional; when sent it must equal the family id (else 400 `invalid_id`)."
            case (.child, _): "Optional; when sent it must equal `{childId}` in the path (else 400 `invalid_id`)."
            default: "Optional; when sent it must equal the id in the path (else 400 `invalid_id`)."
            }
        var properties: [(key: String, value: JSONValue)] = [("id", described(idSchema(collection), idText))]
        for f in fields { properties.append((f.name, field(f, nullable: !f.required))) }
        for name in spec.schema.serverSetFields.sorted() where !fields.contains(where: { $0.name == name }) {
            properties.append((name, ["description": "Server-set; ignored when sent."]))
        }
        var rules: [String] = []
        var anyOf: [JSONValue] = []
        for rule in collection.rules {
            switch rule {
            case .requireOneOf(let names):
                rules.append("At least one of " + names.map { "`\($0)`" }.joined(separator: ", ") + " is required.")
                anyOf = names.map { name -> JSONValue in
                    let notNull: JSONValue = ["not": null]
                    return ["required": [.string(name)], "properties": .object([(key: name, value: notNull)])]
                }
            case .notBefore(let later, let earlier):
                rules.append("`\(later)`, when given, is not before `\(earlier)`.")
            }
        }
        let path =
            switch collection.kind {
            case .singleton: "/api/v1/\(collection.name)"
            case .child: "/api/v1/\(collection.parent ?? "")/{id}/\(collection.name)/{childId}"
            default: "/api/v1/\(collection.name)/{id}"
            }
        var description = "Body of `PUT \(path)`. "
        if !rules.isEmpty { description += rules.joined(separator: " ") + " " }
        description +=
            "`null` for an optional field means absent (its default is stored). Server-set members are ignored. Any other member answers 400 `unknown_field`; a missing required field, a wrong type or a value out of range answers 400 `invalid_field` naming it in `field`."
        var members: [(key: String, value: JSONValue)] = [
            ("type", "object"), ("description", .string(description)), ("properties", .object(properties)),
        ]
        let required = fields.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { members.append(("required", .array(required))) }
        if !anyOf.isEmpty { members.append(("anyOf", .array(anyOf))) }
        members.append(("additionalProperties", false))
        return .object(members)
    }

    static let date: JSONValue = described(schema("SyncDate"), "The new date of sync; also the answer's ETag.")

    static func changes(_ item: String) -> JSONValue {
        [
            "type": "object", "required": ["updated", "deleted"],
            "properties": ["updated": ["type": "array", "items": schema(item)], "deleted": ["type": "array", "items": schema("Id")]],
            "additionalProperties": false,
        ]
    }

    static func listAnswer(_ name: String, item: String) -> JSONValue {
        [
            "type": "object",
            "description": .string(
                "Answer of a full-list sync of `\(name)` (protocol §3). Members in this order. Without a (usable) `date`, `sync` is false, `updated` holds every live item and `deleted` is empty: the client clears its copy first. With a valid `date`, `sync` is true, `updated` holds every item created or changed after it (ordered by modification, oldest first) and `deleted` every id deleted after it; each id at most once and in at most one list. Apply deletes, then upserts, then store the new `date`."
            ),
            "required": ["date", "sync", "updated", "deleted"],
            "properties": [
                "date": date, "sync": ["type": "boolean"], "updated": ["type": "array", "items": schema(item)],
                "deleted": ["type": "array", "items": schema("Id")],
            ],
            "additionalProperties": false,
        ]
    }

    static func pageSyncAnswer(_ name: String, item: String) -> JSONValue {
        [
            "type": "object",
            "description": .string(
                "Answer of a paginated sync of `\(name)` (protocol §4). Members in this order. `deleted` lists every id of this list deleted after `date` and is never paginated or filtered. `crop` true: the client discards its list and keeps only `updated` (a fresh top page)."
            ),
            "required": ["date", "sync", "updated", "deleted", "crop", "nomore"],
            "properties": [
                "date": date,
                "sync": [
                    "type": "boolean",
                    "description":
                        "False for a first page: no `date`, or a `date`/`lastId` the server cannot answer exactly (another database or family, purged tombstones, a `lastId` never known or whose sort key moved after `date`); `deleted` is then empty and `crop` false.",
                ],
                "updated": ["type": "array", "items": schema(item)], "deleted": ["type": "array", "items": schema("Id")],
                "crop": ["type": "boolean"],
                "nomore": [
                    "type": "boolean",
                    "description":
                        "When `crop` is false: true when the list has no item below `lastId` (without `lastId`: below the last of `updated`, or the list is empty when `updated` is). When `crop` is true, or `sync` is false: true when the list has no item below the last of `updated`.",
                ],
            ],
            "additionalProperties": false,
        ]
    }

    static func page(_ name: String, item: String) -> JSONValue {
        [
            "type": "object",
            "description": .string(
                "A page of `\(name)`: the next items strictly below `lastId` in sort order (from the top without `lastId`), and whether none are left below them."
            ),
            "required": ["items", "nomore"],
            "properties": ["items": ["type": "array", "items": schema(item)], "nomore": ["type": "boolean"]],
            "additionalProperties": false,
        ]
    }

    static func bundleAnswer(_ endpoint: String, _ collections: [DataModel.Collection], accounts: Bool) -> JSONValue {
        var properties: [(key: String, value: JSONValue)] = [("date", date), ("sync", ["type": "boolean"])]
        for collection in collections {
            let item = Names(collection.name).item
            if collection.kind == .singleton {
                properties.append(
                    (
                        collection.name,
                        [
                            "anyOf": [schema(item), null],
                            "description": .string(
                                collection.scope == "account"
                                    ? "The caller's own `\(collection.name)`, or null when unchanged since `date`."
                                    : "The family's `\(collection.name)`, or null when unchanged since `date`."),
                        ]
                    ))
            } else {
                properties.append((collection.name, changes(item)))
            }
        }
        if accounts {
            properties.append(
                (
                    "accounts",
                    [
                        "type": "object", "description": "Public profiles of the family's accounts.", "required": ["updated", "deleted"],
                        "properties": [
                            "updated": ["type": "array", "items": schema("AccountProfile")],
                            "deleted": ["type": "array", "items": schema("AccountId")],
                        ],
                        "additionalProperties": false,
                    ]
                ))
        }
        return [
            "type": "object",
            "description": .string(
                "Answer of `GET /\(endpoint)` (protocol §5, §12). Singletons are null when unchanged since `date`; with `sync` false they are always present, and the lists hold every live item with `deleted` empty."
            ),
            "required": .array(properties.map { .string($0.key) }), "properties": .object(properties), "additionalProperties": false,
        ]
    }
}
