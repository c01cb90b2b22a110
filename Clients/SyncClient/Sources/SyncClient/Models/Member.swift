/// A person of the family (`/members`, a full list inside `familysync`), with or without a login.
public struct Member: SyncModel, Equatable {
    /// A member's place in the family.
    public enum Role: String, Codable, Sendable { case parent, child, other }

    public static let collection = SyncCollection.members
    public var id: String
    public var name: String
    public var role: Role
    /// A full date `YYYY-MM-DD`.
    public var birthDate: String?
    public var accountId: String?
    public var modified: String?

    public init(id: String, name: String, role: Role = .other, birthDate: String? = nil, accountId: String? = nil) {
        self.id = id
        self.name = name
        self.role = role
        self.birthDate = birthDate
        self.accountId = accountId
    }

    enum CodingKeys: String, CodingKey { case id, name, role, birthDate, accountId, modified }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        role = try container.value(.role, default: .other)
        birthDate = try container.decodeIfPresent(String.self, forKey: .birthDate)
        accountId = try container.decodeIfPresent(String.self, forKey: .accountId)
        modified = try container.decodeIfPresent(String.self, forKey: .modified)
    }
}
