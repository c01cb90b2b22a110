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

    /// Every collection a client writes through `PUT/GET/DELETE /{name}/{id}`.
    public static let writable: [CollectionSpec] = [contacts, events, places]

    /// Every collection with a sync endpoint of its own.
    public static var synced: [CollectionSpec] { writable.filter { $0.syncEndpoint != nil } }

    /// The collection named `name`, if declared.
    public static func named(_ name: String) -> CollectionSpec? { writable.first { $0.name == name } }

    /// Storage key of the family's public account profiles (written by signup and `POST /accounts`).
    public static let accountsKey = "accounts"
}
