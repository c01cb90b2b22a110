import Foundation

/// The name of a collection of the server's data model (protocol §12): `contacts`, `recipes`, `pins`. The SDK handles
/// any model's collections by name; what each one is (a list, a paginated list, a child, a singleton) comes from the
/// model the server serves (`ServerModel`, read from `GET /api/v1/model`). The generated types of a model add a
/// constant per collection (`SyncCollection.contacts`). Named `SyncCollection`, not `Collection`, so it never hides
/// Swift's `Collection` protocol in an app that imports the SDK.
public struct SyncCollection: RawRepresentable, Hashable, Comparable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ name: String) { rawValue = name }
    public init(stringLiteral value: String) { rawValue = value }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static func < (a: SyncCollection, b: SyncCollection) -> Bool { a.rawValue < b.rawValue }

    /// The family's public account profiles (protocol §12): read-only, carried by the sync endpoint of the model's
    /// family-scoped singleton.
    public static let accounts: SyncCollection = "accounts"

    /// An id as one segment of a path.
    static func escape(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "/"))) ?? id
    }
}
