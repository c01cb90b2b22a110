/// The three versions of an item in a write conflict (a 412 on push), for a `ConflictHandler` to merge.
public struct ConflictVersions: Sendable {
    public let collection: SyncCollection
    public let id: String
    /// The server's version the local edit was made on (nil: created here).
    public let base: JSONObject?
    /// The local edit (nil: a delete).
    public let local: JSONObject?
    /// The server's version now (nil: deleted on the server).
    public let server: JSONObject?
}

/// How to settle a conflict.
public enum ConflictResolution: Sendable, Equatable {
    /// Keep the server's version; the local edit is dropped (the default).
    case keepServer
    /// Write the local edit over the server's version.
    case keepLocal
    /// Write this merged state instead.
    case merged(JSONObject)
}

/// Decides a conflict for one collection (`SyncClient.setConflictHandler`).
public typealias ConflictHandler = @Sendable (ConflictVersions) -> ConflictResolution
