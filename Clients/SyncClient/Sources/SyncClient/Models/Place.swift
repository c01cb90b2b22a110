/// A place the family uses (`/places`, a full list synced by `plcsync`).
public struct Place: SyncModel, Equatable {
    public static let collection = SyncCollection.places
    public var id: String
    public var name: String
    public var address: String?
    public var latitude: Double?
    public var longitude: Double?
    public var modified: String?

    public init(id: String, name: String, address: String? = nil, latitude: Double? = nil, longitude: Double? = nil) {
        self.id = id
        self.name = name
        self.address = address
        self.latitude = latitude
        self.longitude = longitude
    }
}
