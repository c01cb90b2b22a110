/// A contact of the family's address book (`/contacts`, a full list synced by `ctcsync`).
public struct Contact: SyncModel, Equatable {
    public static let collection = SyncCollection.contacts
    public var id: String
    public var firstName: String?
    public var lastName: String?
    public var emails: [String]
    public var phones: [String]
    public var birthdayEventId: String?
    public var notes: String?
    public var modified: String?

    public init(
        id: String, firstName: String? = nil, lastName: String? = nil, emails: [String] = [], phones: [String] = [],
        birthdayEventId: String? = nil, notes: String? = nil
    ) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.emails = emails
        self.phones = phones
        self.birthdayEventId = birthdayEventId
        self.notes = notes
    }

    enum CodingKeys: String, CodingKey { case id, firstName, lastName, emails, phones, birthdayEventId, notes, modified }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        firstName = try container.decodeIfPresent(String.self, forKey: .firstName)
        lastName = try container.decodeIfPresent(String.self, forKey: .lastName)
        emails = try container.value(.emails, default: [])
        phones = try container.value(.phones, default: [])
        birthdayEventId = try container.decodeIfPresent(String.self, forKey: .birthdayEventId)
        notes = try container.decodeIfPresent(String.self, forKey: .notes)
        modified = try container.decodeIfPresent(String.self, forKey: .modified)
    }
}
