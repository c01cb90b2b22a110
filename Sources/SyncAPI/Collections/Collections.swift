/// The registry of every collection the server knows, declared once (protocol §2).
public enum Collections {
    public static let contacts = CollectionSpec(
        name: "contacts", kind: .fullList,
        schema: ItemSchema(
            fields: [
                FieldSpec("firstName", .string(maxLength: Limits.nameLength)),
                FieldSpec("lastName", .string(maxLength: Limits.nameLength)),
                FieldSpec("emails", .stringList(maxLength: Limits.nameLength)),
                FieldSpec("phones", .stringList(maxLength: Limits.nameLength)),
                FieldSpec("birthdayEventId", .reference),
                FieldSpec("notes", .string(maxLength: Limits.textLength)),
            ],
            rules: [
                { values throws in
                    if values["firstName"] == .null && values["lastName"] == .null {
                        throw SyncError.invalidField("firstName", "firstName or lastName is required.")
                    }
                }
            ]),
        syncEndpoint: "ctcsync")

    public static let events = CollectionSpec(
        name: "events", kind: .fullList,
        schema: ItemSchema(
            fields: [
                FieldSpec("title", .string(maxLength: Limits.nameLength), required: true),
                FieldSpec("start", .dateTime, required: true),
                FieldSpec("end", .dateTime),
                FieldSpec("allDay", .bool, default: .bool(false)),
                FieldSpec("location", .string(maxLength: Limits.nameLength)),
                FieldSpec("contactIds", .referenceList),
            ],
            rules: [
                { values throws in
                    if case .string(let end)? = values["end"], case .string(let start)? = values["start"],
                        let e = Timestamp.parseDateTime(end), let s = Timestamp.parseDateTime(start), e < s
                    {
                        throw SyncError.invalidField("end", "end must not be before start.")
                    }
                }
            ]),
        syncEndpoint: "evtsync")

    public static let places = CollectionSpec(
        name: "places", kind: .fullList,
        schema: ItemSchema(fields: [
            FieldSpec("name", .string(maxLength: Limits.nameLength), required: true),
            FieldSpec("address", .string(maxLength: Limits.nameLength)),
            FieldSpec("latitude", .number(-90...90)),
            FieldSpec("longitude", .number(-180...180)),
        ]),
        syncEndpoint: "plcsync")

    public static let threads = CollectionSpec(
        name: "threads", kind: .paginated,
        schema: ItemSchema(fields: [
            FieldSpec("title", .string(maxLength: Limits.nameLength), required: true),
            FieldSpec("participants", .referenceList),
            FieldSpec("read", .bool, default: .bool(false)),
        ]),
        syncEndpoint: "msgsyncthread", sortKey: .lastChildCreated(field: "lastMessageAt"), childName: "messages")

    public static let messages = CollectionSpec(
        name: "messages", kind: .child(parent: "threads"),
        schema: ItemSchema(fields: [FieldSpec("text", .string(maxLength: Limits.textLength), required: true)]),
        syncEndpoint: nil, sortKey: .created, authored: true)

    /// The types a wall post may have.
    public static let wallTypes = ["text", "photo", "event", "link"]

    public static let wall = CollectionSpec(
        name: "wall", kind: .paginated,
        schema: ItemSchema(fields: [
            FieldSpec("type", .oneOf(wallTypes), required: true),
            FieldSpec("text", .string(maxLength: Limits.textLength)),
            FieldSpec("mediaUrl", .url),
        ]),
        syncEndpoint: "wallsync", sortKey: .created, childName: "comments", filterField: "type", authored: true)

    public static let comments = CollectionSpec(
        name: "comments", kind: .child(parent: "wall"),
        schema: ItemSchema(fields: [FieldSpec("text", .string(maxLength: Limits.textLength), required: true)]),
        syncEndpoint: nil, sortKey: .created, authored: true)

    public static let family = CollectionSpec(
        name: "family", kind: .singleton(perAccount: false),
        schema: ItemSchema(fields: [
            FieldSpec("name", .string(maxLength: Limits.nameLength), required: true),
            FieldSpec("pictureUrl", .url),
        ]),
        syncEndpoint: "familysync")

    public static let members = CollectionSpec(
        name: "members", kind: .fullList,
        schema: ItemSchema(fields: [
            FieldSpec("name", .string(maxLength: Limits.nameLength), required: true),
            FieldSpec("role", .oneOf(["parent", "child", "other"]), default: .string("other")),
            FieldSpec("birthDate", .date),
            FieldSpec("accountId", .reference),
        ]),
        syncEndpoint: nil, changesFamily: true)

    public static let settings = CollectionSpec(
        name: "settings", kind: .singleton(perAccount: true),
        schema: ItemSchema(fields: [
            FieldSpec("locale", .string(maxLength: 64)),
            FieldSpec("timeZone", .string(maxLength: 64)),
            FieldSpec("notifications", .bool, default: .bool(true)),
        ]),
        syncEndpoint: "familysync")

    /// Every collection a client writes through `PUT/GET/DELETE /{name}/{id}` (children under their parent's path).
    public static let writable: [CollectionSpec] = [
        contacts, events, places, threads, messages, wall, comments, family, members, settings,
    ]

    /// The collection named `name`, if declared.
    public static func named(_ name: String) -> CollectionSpec? { writable.first { $0.name == name } }

    /// Storage key of the family's public account profiles (written by signup and `POST /accounts`).
    public static let accountsKey = "accounts"
}
