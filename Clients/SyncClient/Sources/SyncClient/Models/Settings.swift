/// The signed-in account's own settings (`/settings`, a singleton per account synced by `familysync`).
public struct Settings: SyncModel, Equatable {
    public static let collection = SyncCollection.settings
    /// The account's id.
    public var id: String
    public var locale: String?
    public var timeZone: String?
    public var notifications: Bool
    public var modified: String?

    public init(id: String, locale: String? = nil, timeZone: String? = nil, notifications: Bool = true) {
        self.id = id
        self.locale = locale
        self.timeZone = timeZone
        self.notifications = notifications
    }

    enum CodingKeys: String, CodingKey { case id, locale, timeZone, notifications, modified }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        timeZone = try container.decodeIfPresent(String.self, forKey: .timeZone)
        notifications = try container.value(.notifications, default: true)
        modified = try container.decodeIfPresent(String.self, forKey: .modified)
    }
}
