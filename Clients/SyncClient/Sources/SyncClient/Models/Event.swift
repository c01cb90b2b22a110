/// A calendar event (`/events`, a full list synced by `evtsync`). Dates are RFC 3339 strings as the server sends them.
public struct Event: SyncModel, Equatable {
    public static let collection = SyncCollection.events
    public var id: String
    public var title: String
    public var start: String
    public var end: String?
    public var allDay: Bool
    public var location: String?
    public var contactIds: [String]
    public var modified: String?

    public init(
        id: String, title: String, start: String, end: String? = nil, allDay: Bool = false, location: String? = nil,
        contactIds: [String] = []
    ) {
        self.id = id
        self.title = title
        self.start = start
        self.end = end
        self.allDay = allDay
        self.location = location
        self.contactIds = contactIds
    }

    enum CodingKeys: String, CodingKey { case id, title, start, end, allDay, location, contactIds, modified }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        start = try container.decode(String.self, forKey: .start)
        end = try container.decodeIfPresent(String.self, forKey: .end)
        allDay = try container.value(.allDay, default: false)
        location = try container.decodeIfPresent(String.self, forKey: .location)
        contactIds = try container.value(.contactIds, default: [])
        modified = try container.decodeIfPresent(String.self, forKey: .modified)
    }
}
